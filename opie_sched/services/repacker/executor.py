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
"""Live migrations of a plan through openstacksdk, one at a time.

For each :class:`opie_sched.rpm.planner.Move`, in order:
``compute.live_migrate_server(server, host=destination,
block_migration=...)`` (the scheduler still checks the destination: no
``force``), then poll the server until it is no longer MIGRATING. The move
succeeded when the server is ACTIVE on the destination host
(``OS-EXT-SRV-ATTR:host``); anything else (ERROR, back on the source after
a rollback, an API error, ``timeout`` seconds passed, the server gone) is a
failure: it is logged and the rest of the plan goes on. At most ``budget``
migrations are attempted (attempts count, failed or not). Dry-run
attempts nothing and reports every move as ``'planned'``.
"""

import dataclasses
import logging
import time

LOG = logging.getLogger(__name__)

#: Results of an :class:`Outcome`.
DONE, FAILED, PLANNED, SKIPPED = 'done', 'failed', 'planned', 'skipped'


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What became of one move.

    :param move: the :class:`~opie_sched.rpm.planner.Move`.
    :param result: ``'done'``, ``'failed'``, ``'planned'`` (dry run) or
        ``'skipped'`` (over the budget).
    :param detail: why, for failures and skips.
    :param seconds: wall time of the migration, seconds.
    """

    move: object
    result: str
    detail: str = ''
    seconds: float = 0.0


def block_migration_value(text):
    """``'auto'``, True or False for ``[opie_repacker] block_migration``.

    :raises ValueError: anything else.
    """
    value = str(text).strip().lower()
    if value == 'auto':
        return 'auto'
    if value in ('true', 'false'):
        return value == 'true'
    raise ValueError("block_migration must be auto, true or false, got %r"
                     % (text,))


class Executor:
    """Runs plans on a cloud.

    :param conn: an ``openstack.connection.Connection`` (admin).
    :param block_migration: ``'auto'``, True or False.
    :param timeout: seconds one migration may take.
    :param poll_interval: seconds between two polls.
    :param clock: ``time.monotonic``-like; :param sleep: ``time.sleep``-like.
    """

    def __init__(self, conn, block_migration='auto', timeout=600.0,
                 poll_interval=2.0, clock=time.monotonic, sleep=time.sleep):
        self.conn = conn
        self.block_migration = block_migration
        self.timeout = timeout
        self.poll_interval = poll_interval
        self._clock = clock
        self._sleep = sleep

    def execute(self, moves, budget, dry_run=False):
        """Carry out ``moves`` in order; list of :class:`Outcome`.

        :param budget: migrations that may be attempted (int >= 0).
        :raises ValueError: a negative budget.
        """
        if budget < 0:
            raise ValueError('budget must be >= 0, got %r' % (budget,))
        outcomes = []
        for n, move in enumerate(moves):
            if dry_run:
                outcomes.append(Outcome(move, PLANNED))
            elif n >= budget:
                outcomes.append(Outcome(move, SKIPPED,
                                        'migration budget exhausted'))
            else:
                outcomes.append(self.migrate(move))
        return outcomes

    def migrate(self, move):
        """Live-migrate one move and wait; its :class:`Outcome`."""
        began = self._clock()
        LOG.info('Live-migrating %s (%s) %s -> %s (%s, score %.3f)',
                 move.server, move.name, move.source, move.destination,
                 move.reason, move.score)
        try:
            self.conn.compute.live_migrate_server(
                move.server, host=move.destination,
                block_migration=self.block_migration)
            detail = self._wait(move, began)
        except Exception as exc:
            detail = '%s: %s' % (type(exc).__name__,
                                 str(exc).splitlines()[0] if str(exc)
                                 else '')
        seconds = self._clock() - began
        if detail is None:
            LOG.info('Server %s is ACTIVE on %s after %.1f s', move.server,
                     move.destination, seconds)
            return Outcome(move, DONE, seconds=seconds)
        LOG.error('Live migration of %s from %s to %s failed: %s; going on '
                  'with the plan', move.server, move.source,
                  move.destination, detail)
        return Outcome(move, FAILED, detail, seconds)

    def _wait(self, move, began):
        """None when the server is ACTIVE on the destination, else why."""
        while True:
            server = self.conn.compute.get_server(move.server)
            status = server.status
            task = getattr(server, 'task_state', None)
            host = getattr(server, 'compute_host', None)
            if status != 'MIGRATING' and not task:
                if status == 'ACTIVE' and host == move.destination:
                    return None
                return 'server is %s on %s' % (status, host)
            if status == 'ERROR':
                return 'server is ERROR on %s' % host
            if self._clock() - began > self.timeout:
                return 'still %s after %g s' % (status, self.timeout)
            self._sleep(self.poll_interval)
