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
"""``opie-reconciler``: repair overcommitted hosts, once or periodically.

Reads nova.conf like any nova service (``--config-file``). Each round finds
the hosts whose full state exceeds capacity and terminates their cheapest
preemptible instances (see :mod:`opie_sched.scheduler.reconciler`).
``--once`` runs one round and exits; otherwise it loops every
``[opie_reconciler] interval`` seconds. Like the reconciler inside
opie-scheduler, it runs only while it holds the reconciler lock on
``[opie_preemption] coordination_url``: start it on several hosts and one
acts at a time.
"""

from nova import monkey_patch; monkey_patch.patch(backend='threading')  # noqa

import sys  # noqa: E402
import time  # noqa: E402

from oslo_config import cfg  # noqa: E402
from oslo_log import log as logging  # noqa: E402

import nova.conf  # noqa: E402
from nova import config  # noqa: E402
from nova import objects  # noqa: E402

from opie_sched import conf as opie_conf  # noqa: E402

CONF = nova.conf.CONF
LOG = logging.getLogger(__name__)

cli_opts = [
    cfg.BoolOpt('once', default=False,
                help='Run one reconciliation round and exit.'),
]


def main():
    opie_conf.register_opts(CONF)
    CONF.register_cli_opts(cli_opts)
    config.parse_args(sys.argv)
    logging.setup(CONF, 'nova')
    objects.register_all()
    from opie_sched.scheduler import locks
    from opie_sched.scheduler import reconciler
    rec = reconciler.Reconciler()
    coord = locks.coordinator(CONF)
    while True:
        started = time.monotonic()
        try:
            if coord.hold(locks.RECONCILER_LOCK):
                acted = rec.run_once()
                LOG.info('Reconciler round done: %d host(s) repaired',
                         len(acted))
            else:
                LOG.info('Another reconciler holds the lock; waiting')
        except Exception:
            LOG.exception('Reconciler round failed')
            if CONF.once:
                return 1
        if CONF.once:
            return 0
        time.sleep(max(CONF.opie_reconciler.interval
                       - (time.monotonic() - started), 0))
