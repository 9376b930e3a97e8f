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
``--once`` runs one round and exits (0, or 1 when the round failed);
otherwise a round starts every ``[opie_reconciler] interval`` seconds (an
oslo.service service, see :func:`opie_sched.common.coordination.serve`)
until SIGTERM or SIGINT, which let the current round finish (exit code 0).
Like the reconciler inside opie-scheduler, it acts only while it holds the
reconciler lock on ``[opie_preemption] coordination_url``: start it on
several hosts and one acts at a time.
"""

# Patched as the installed nova's own services are (native threads on nova
# 33 and 34, eventlet on 31 and 32); this also selects oslo.service's
# backend (opie_sched.common.compat).
from opie_sched.common import compat; compat.patch_nova_service()  # noqa

import sys  # noqa: E402

from oslo_config import cfg  # noqa: E402
from oslo_log import log as logging  # noqa: E402

import nova.conf  # noqa: E402
from nova import config  # noqa: E402
from nova import objects  # noqa: E402

from opie_sched.common import coordination  # noqa: E402
from opie_sched import conf as opie_conf  # noqa: E402
from opie_sched.conf import validation  # noqa: E402

CONF = nova.conf.CONF
LOG = logging.getLogger(__name__)

cli_opts = [
    cfg.BoolOpt('once', default=False,
                help='Run one reconciliation round and exit.'),
]


def run_round(reconciler, coord):
    """One round under the reconciler lock; False when it failed (logged).

    :param reconciler: :class:`opie_sched.scheduler.reconciler.Reconciler`.
    :param coord: :class:`opie_sched.scheduler.locks.Coordinator`.
    """
    from opie_sched.scheduler import locks
    try:
        if coord.hold(locks.RECONCILER_LOCK):
            acted = reconciler.run_once()
            LOG.info('Reconciler round done: %d host(s) repaired',
                     len(acted))
        else:
            LOG.info('Another reconciler holds the lock; waiting')
    except Exception:
        LOG.exception('Reconciler round failed')
        return False
    return True


class ReconcilerService(coordination.PeriodicService):
    """:func:`run_round` every ``interval`` seconds; stopping releases the
    lock and leaves the coordination backend, so that another replica
    takes over at its next round.
    """

    def __init__(self, reconciler, coord, interval):
        super().__init__(interval, 'opie-reconciler')
        self.reconciler = reconciler
        self.coord = coord

    def run_round(self):
        run_round(self.reconciler, self.coord)

    def stop(self):
        super().stop()
        self.coord.stop()


def main():
    opie_conf.register_opts(CONF)
    CONF.register_cli_opts(cli_opts)
    config.parse_args(sys.argv)
    logging.setup(CONF, 'nova')
    validation.validate(CONF)  # one line, exit 1 (cmd/launch.py)
    objects.register_all()
    from opie_sched.scheduler import locks
    from opie_sched.scheduler import reconciler
    rec = reconciler.Reconciler()
    try:
        coord = locks.coordinator(CONF)
    except locks.LockDirError as exc:
        LOG.error('opie-reconciler cannot start: %s', exc)
        return 1
    if CONF.once:
        return 0 if run_round(rec, coord) else 1
    return coordination.serve(CONF, ReconcilerService(
        rec, coord, CONF.opie_reconciler.interval))
