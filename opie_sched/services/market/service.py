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
"""The opie-market service: wiring and the periodic loop.

:func:`build_engine` puts together, from ``[opie_market]`` (see
:mod:`.opts`): the database (:class:`.db.api.MarketStore`), Nova through
openstacksdk (:class:`.cloud.Cloud`), tooz leader election
(:class:`.leadership.Leadership`), the optional oslo.messaging notifier
(:func:`.notifications.make_notifier`) and the optional listener of
Nova's versioned notifications (:class:`.listener.DemandTracker`).

:class:`MarketService` runs :meth:`.engine.MarketEngine.tick` every
``tick_interval`` seconds as an oslo.service service until stopped; an
exception in a tick is logged and the next tick runs.
"""

import os

from oslo_log import log as logging

from opie_sched.common import coordination
from opie_sched.services.market import cloud as market_cloud
from opie_sched.services.market.db import api as db_api
from opie_sched.services.market.db import migration
from opie_sched.services.market import engine as market_engine
from opie_sched.services.market import events as market_events
from opie_sched.services.market import leadership as market_leadership
from opie_sched.services.market import listener as market_listener
from opie_sched.services.market import notifications
from opie_sched.services.market import opts
from opie_sched.services.market import settings as market_settings

LOG = logging.getLogger(__name__)

PUBLISHER = notifications.PUBLISHER


class DatabaseNotReady(RuntimeError):
    """The database schema is not at the newest revision."""


def make_store(conf, sync=False):
    """The market database of ``conf`` (sqlite file by default).

    :param sync: make sure the schema is current: the embedded sqlite
        database is migrated on the spot; a shared MySQL/PostgreSQL one
        must have been migrated with ``opie-market db sync`` (replicas do
        not race to migrate it).
    :raises DatabaseNotReady: a shared database is not migrated.
    """
    url = opts.connection_url(conf)
    sqlite = url.startswith('sqlite:')
    if url.startswith('sqlite:///') and not url.startswith(
            'sqlite:///:memory:'):
        directory = os.path.dirname(url[len('sqlite:///'):])
        if directory:
            os.makedirs(directory, exist_ok=True)
    store = db_api.MarketStore(url, **opts.engine_options(conf))
    if sync:
        if sqlite:
            store.sync()
        elif store.version() != migration.head_revision():
            raise DatabaseNotReady(
                'the market database is at revision %s, not %s: run '
                '"opie-market db sync"' % (store.version(),
                                           migration.head_revision()))
    return store


def build_engine(conf, store=None, cloud=None, leadership=None,
                 notifier=None, tracker=None):
    """A :class:`.engine.MarketEngine` from ``conf`` (any part may be
    given instead).

    :raises .settings.ConfigError: invalid ``[opie_market]`` settings.
    """
    g = opts.group(conf)
    settings = market_settings.Settings.from_conf(g)
    if store is None:
        store = make_store(conf, sync=True)
    if cloud is None:
        cloud = market_cloud.Cloud.from_conf(conf)
    if leadership is None:
        leadership = market_leadership.Leadership(
            opts.coordination_url(conf), g.member_id)
    if notifier is None:
        notifier = notifications.make_notifier(conf)
    return market_engine.MarketEngine(store, cloud, settings,
                                      leadership=leadership,
                                      notifier=notifier, tracker=tracker)


class MarketService(coordination.PeriodicService):
    """The periodic market worker, an oslo.service service.

    Runs :meth:`.engine.MarketEngine.tick` every ``interval`` seconds
    (oslo.service's ``FixedIntervalLoopingCall``, see
    :class:`opie_sched.common.coordination.PeriodicService`); a tick
    that raises is logged and the next one runs. :meth:`stop` lets the
    tick in progress finish, then stops the listener and leaves the
    leader election.

    :param engine: :class:`.engine.MarketEngine`.
    :param interval: seconds between ticks.
    :param listener: optional started-on-start notification listener.
    """

    round_failed = 'market tick failed'

    def __init__(self, engine, interval, listener=None):
        super().__init__(interval, PUBLISHER)
        self.engine = engine
        self.listener = listener

    def run_round(self):
        report = self.engine.tick()
        if report.leader and (report.notices or report.preempted
                              or report.errors):
            LOG.info('period %s: notices %s, preempted %s, errors %s',
                     market_cloud.iso(report.period_start), report.notices,
                     report.preempted, report.errors)

    def _start(self):
        if self.listener is not None:
            try:
                self.listener.start()
            except Exception:
                LOG.exception('notification listener failed to start; '
                              'relying on the periodic reconciliation')
                self.listener = None
        super()._start()

    def stop(self):
        super().stop()
        if self.listener is not None:
            try:
                self.listener.stop()
                self.listener.wait()
            except Exception:
                LOG.exception('stopping the notification listener failed')
        if self.engine.leadership is not None:
            self.engine.leadership.stop()


def create_service(conf):
    """The service as configured: engine, tracker, event recorder
    (:class:`.events.EventRecorder`) and listener.
    """
    tracker = market_listener.DemandTracker()
    engine = build_engine(conf, tracker=tracker)
    recorder = market_events.EventRecorder(engine.store, tracker)
    return MarketService(engine, opts.group(conf).tick_interval,
                         market_listener.make_listener(conf, tracker,
                                                       [recorder]))
