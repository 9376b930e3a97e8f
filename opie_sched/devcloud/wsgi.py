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
"""WSGI entry point of the devcloud's HTTP services under gunicorn.

``gunicorn ... opie_sched.devcloud.wsgi:application`` serves the module named
by ``OPIE_DEVCLOUD_WSGI`` (``keystone.wsgi.api``, ``placement.wsgi.api``,
``glance.wsgi.api``, ``nova.wsgi.osapi_compute``) or, for ``market``, the
opie-market API (paste pipeline ``main`` of ``OPIE_MARKET_PASTE`` with the
configuration file ``OPIE_MARKET_CONFIG``), or for ``neutron-standin`` the
stand-in of :mod:`opie_sched.devcloud.neutron_standin`.

oslo.config parses ``sys.argv`` when the application is built, and gunicorn's
own arguments there make it fail (``unrecognized arguments: --bind``), so
``sys.argv`` is reset first.
"""

import importlib
import os
import sys


def _market(config_file, paste_file):
    """The market API: pipeline ``main`` of ``paste_file``.

    keystonemiddleware reads ``[keystone_authtoken]`` of the project named
    in the paste file from ``oslo_config_file`` when given (else from
    /etc/opie_sched/opie_sched.conf), so the configuration file goes into
    the paste global configuration.
    """
    from oslo_config import cfg
    from oslo_log import log as logging
    from paste import deploy

    from opie_sched.services.market.api import app
    from opie_sched.services.market import opts

    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    logging.register_options(conf)
    conf(['--config-file', config_file], project='opie_sched',
         prog='opie-market-api')
    logging.setup(conf, 'opie-market-api')
    app.CONF = conf
    return deploy.loadapp('config:%s' % paste_file, name='main',
                          global_conf={'oslo_config_file': config_file})


def load(name, environ=None):
    """The WSGI application called ``name`` (see the module docstring).

    :raises KeyError: a variable it needs is unset.
    """
    environ = os.environ if environ is None else environ
    sys.argv = sys.argv[:1]
    if name == 'market':
        return _market(environ['OPIE_MARKET_CONFIG'],
                       environ['OPIE_MARKET_PASTE'])
    if name == 'neutron-standin':
        from opie_sched.devcloud import neutron_standin
        return neutron_standin.application
    return importlib.import_module(name).application


application = load(os.environ['OPIE_DEVCLOUD_WSGI'])
