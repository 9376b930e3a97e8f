# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.
"""The market API for a WSGI server: ``opie_sched.wsgi.market:application``.

Built at import, as WSGI servers expect, from the environment:

``OPIE_MARKET_CONFIG``
    the configuration file (default ``/etc/opie_sched/opie_sched.conf``);
``OPIE_MARKET_PASTE``
    the paste file (default ``/etc/opie_sched/market-api-paste.ini``);
``OPIE_MARKET_PIPELINE``
    its pipeline (default ``main``: request id, keystonemiddleware, API).

DevStack's uwsgi configuration sets them with ``env =`` lines.
"""

import os

DEFAULT_CONFIG = '/etc/opie_sched/opie_sched.conf'
DEFAULT_PASTE = '/etc/opie_sched/market-api-paste.ini'


def init_application(environ=None):
    """The paste pipeline named by ``environ`` (default ``os.environ``)."""
    from opie_sched.services.market.api import app

    environ = os.environ if environ is None else environ
    return app.init_application(
        ['--config-file', environ.get('OPIE_MARKET_CONFIG', DEFAULT_CONFIG)],
        paste_file=environ.get('OPIE_MARKET_PASTE', DEFAULT_PASTE),
        name=environ.get('OPIE_MARKET_PIPELINE', 'main'))


application = init_application()
