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
"""The ``opie-repacker`` loop: sample -> triggers -> plan -> migrate.

Every ``[opie_repacker] sample_interval`` seconds the service samples the
utilisation of every compute host (:mod:`.collector`; Paper IV monitors
every minute). Every ``interval`` seconds (Paper IV §5: the PM state
profiler runs every 10 minutes) it runs a *period*:

1. take the tooz lock ``opie-repacker`` without waiting; if another
   replica holds it, skip the period (two replicas never act at once);
2. sample the hosts and build the planner's input;
3. plan with the ``[opie_repacker] strategy``
   (:mod:`opie_sched.services.repacker.strategies`; default ``rpm``:
   :func:`opie_sched.rpm.planner.plan`, thesis Paper IV §4.2 and §5.3
   triggers, overload before underload, RPM score of §4.3.1, preemptible
   servers drained first; ``p2p``: thesis Paper II; ``gossip``: thesis
   Paper III), at most ``max_migrations`` moves per period;
4. execute the plan through live migrations (:mod:`.executor`), or only
   print and log it in dry-run mode.

The lock is tooz's file driver in ``[opie_repacker] state_dir`` unless
``coordination_url`` names another backend.
"""

import dataclasses
import logging
import os
import socket
import time
import uuid

from opie_sched.common import coordination
from opie_sched.conf import repacker as opts_mod
from opie_sched.rpm import planner
from opie_sched.services.repacker import collector as collector_mod
from opie_sched.services.repacker import executor as executor_mod
from opie_sched.services.repacker import strategies as strategies_mod

LOG = logging.getLogger(__name__)

#: The tooz lock name shared by every replica.
LOCK_NAME = b'opie-repacker'
#: History file name in the state directory.
HISTORY_FILE = 'history.json'


@dataclasses.dataclass
class Period:
    """What one period did.

    :param hosts: the planner's input (list of :class:`planner.Host`).
    :param plan: the :class:`planner.Plan` (None when locked or failed).
    :param outcomes: list of :class:`executor.Outcome`.
    :param status: ``'ok'``, ``'locked'`` (another replica acts) or
        ``'error'``. :param error: the error message.
    """

    hosts: list = dataclasses.field(default_factory=list)
    plan: object = None
    outcomes: list = dataclasses.field(default_factory=list)
    status: str = 'ok'
    error: str = ''


def coordination_url(conf):
    """The tooz URL: ``coordination_url`` or the file driver in
    ``state_dir/locks``.
    """
    opts = conf[opts_mod.GROUP]
    return opts.coordination_url or 'file://' + os.path.join(
        opts.state_dir, 'locks')


class RepackerService(coordination.CoordinatedRounds):
    """The repacker of one cloud.

    :meth:`run_once` is one period. The daemon (:meth:`service`,
    :func:`opie_sched.common.coordination.serve`) runs :meth:`run_round`
    every :meth:`round_interval` seconds as an oslo.service service.

    :param conf: ``cfg.ConfigOpts`` with :func:`opts.register_opts` done.
    :param conn: an ``openstack.connection.Connection``; default one from
        ``[opie_repacker] cloud`` / ``OS_*`` at first use.
    :param collector: optional :class:`collector.Collector`.
    :param executor: optional :class:`executor.Executor`.
    :param coordinator: optional started tooz coordinator.
    :param out: callable printing a dry-run plan (default: log only).
    :param strategy: optional strategy object (``plan(hosts) -> Plan``);
        default: :func:`strategies.load` of ``[opie_repacker] strategy``
        at the first period.
    """

    def __init__(self, conf, conn=None, collector=None, executor=None,
                 coordinator=None, member_id=None, out=None, strategy=None):
        self.conf = conf
        self.opts = conf[opts_mod.GROUP]
        self._conn = conn
        self._collector = collector
        self._executor = executor
        self._strategy = strategy
        self._init_coordination(coordinator)
        self._last_period = None
        self.member_id = member_id or 'opie-repacker-%s-%d-%s' % (
            socket.gethostname(), os.getpid(), uuid.uuid4().hex[:6])
        self.out = out

    # -- wiring -------------------------------------------------------------

    @property
    def collector(self):
        if self._collector is None:
            path = (os.path.join(self.opts.state_dir, HISTORY_FILE)
                    if self.opts.persist_history else None)
            history = collector_mod.History(self.opts.trigger_samples, path)
            self._collector = collector_mod.Collector(
                self.conn, history, dirty_rate=self.opts.dirty_rate)
        return self._collector

    @property
    def executor(self):
        if self._executor is None:
            self._executor = executor_mod.Executor(
                self.conn, executor_mod.block_migration_value(
                    self.opts.block_migration),
                timeout=self.opts.migration_timeout,
                poll_interval=self.opts.poll_interval)
        return self._executor

    @property
    def strategy(self):
        """The consolidation strategy.

        :raises opie_sched.services.repacker.strategies.StrategyError: unknown
            or
            broken plugin (the period reports it as an error).
        """
        if self._strategy is None:
            self._strategy = strategies_mod.load(self.conf)
        return self._strategy

    def _coordination_url(self):
        os.makedirs(self.opts.state_dir, exist_ok=True)
        return coordination_url(self.conf)

    # -- periods ------------------------------------------------------------

    def sample(self):
        """Record one utilisation sample per host; the planner's input.

        :raises opie_sched.services.repacker.collector.CollectError: see there.
        """
        return self.collector.sample(self.opts.sample_interval)

    def run_once(self, dry_run=None):
        """One period under the lock; a :class:`Period`.

        :param dry_run: override ``[opie_repacker] dry_run``.
        """
        dry_run = self.opts.dry_run if dry_run is None else dry_run
        if self.coordinator is None:
            self.start()
        lock = self.coordinator.get_lock(LOCK_NAME)
        if not lock.acquire(blocking=False):
            LOG.info('Another repacker replica is acting; period skipped')
            return Period(status='locked')
        try:
            return self._period(dry_run)
        except (collector_mod.CollectError, planner.PlanError) as exc:
            error = str(exc)
        except Exception as exc:
            LOG.exception('Repacker period failed')
            return Period(status='error', error='%s: %s' % (
                type(exc).__name__, exc))
        finally:
            lock.release()
        LOG.error('Repacker period failed: %s', error)
        return Period(status='error', error=error)

    def _period(self, dry_run):
        hosts = self.sample()
        result = self.strategy.plan(hosts)
        text = planner.format_plan(result, hosts)
        if dry_run and self.out is not None:
            self.out(text)
        for line in text.splitlines():
            LOG.info('%s%s', '[dry run] ' if dry_run else '', line)
        outcomes = self.executor.execute(result.moves,
                                         self.opts.max_migrations,
                                         dry_run=dry_run)
        if not dry_run and outcomes:
            done = sum(1 for o in outcomes if o.result == executor_mod.DONE)
            LOG.info('Period done: %d of %d migrations succeeded', done,
                     len(outcomes))
        return Period(hosts=hosts, plan=result, outcomes=outcomes)

    def round_interval(self):
        """Seconds between two rounds of the daemon: the shorter of
        ``sample_interval`` (when not 0) and ``interval``, 1 s when both
        are 0.
        """
        return min(self.opts.sample_interval or self.opts.interval,
                   self.opts.interval) or 1.0

    def run_round(self):
        """The daemon's round: a period when ``interval`` seconds have
        passed since the last one started (the first round is one), else
        a utilisation sample. An exception is logged.
        """
        began = time.monotonic()
        try:
            if (self._last_period is None
                    or began - self._last_period >= self.opts.interval):
                self._last_period = began
                self.run_once()
            else:
                self.sample()
        except Exception:
            LOG.exception('Repacker round failed')
