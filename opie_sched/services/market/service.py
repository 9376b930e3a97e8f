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
openstacksdk (:class:`.engine.Cloud`), tooz leader election
(:class:`.engine.Leadership`), the optional oslo.messaging notifier and
the optional listener of Nova's versioned notifications
(:class:`.engine.DemandTracker`).

:class:`MarketService` runs :meth:`.engine.MarketEngine.tick` every
``tick_interval`` seconds as an oslo.service service until stopped; an
exception in a tick is logged and the next tick runs.
"""

import os
import socket

from oslo_log import log as logging

from opie_sched.common import coordination
from opie_sched.common import credentials
from opie_sched.services.market.db import api as db_api
from opie_sched.services.market.db import migration
from opie_sched.services.market import engine as market_engine
from opie_sched.services.market import opts

LOG = logging.getLogger(__name__)

PUBLISHER = 'opie-market'


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
    store = db_api.MarketStore(url)
    if sync:
        if sqlite:
            store.sync()
        elif store.version() != migration.head_revision():
            raise DatabaseNotReady(
                'the market database is at revision %s, not %s: run '
                '"opie-market db sync"' % (store.version(),
                                           migration.head_revision()))
    return store


def make_connection(conf):
    """The openstacksdk connection of the market: ``[service_credentials]``
    when its ``auth_type`` is set, else ``[opie_market] cloud`` (clouds.yaml)
    or ``OS_*`` (:func:`opie_sched.common.credentials.connect`).
    """
    return credentials.connect(conf, cloud=opts.group(conf).cloud,
                               app_name=PUBLISHER)


def _notification_transport(conf):
    import oslo_messaging
    return oslo_messaging.get_notification_transport(conf)


def make_notifier(conf):
    """An oslo.messaging notifier, or None when notifications are off
    (``emit_notifications`` false, or no ``[oslo_messaging_notifications]
    driver``).
    """
    if not opts.group(conf).emit_notifications:
        return None
    try:
        import oslo_messaging
        notifier = oslo_messaging.Notifier(
            _notification_transport(conf),
            publisher_id='%s.%s' % (PUBLISHER, socket.gethostname()))
        drivers = [d for d in conf.oslo_messaging_notifications.driver
                   if d != 'noop']
        return notifier if drivers and notifier.is_enabled() else None
    except Exception:
        LOG.exception('notifications disabled: no usable transport')
        return None


def make_listener(conf, tracker):
    """A listener of Nova's versioned notifications feeding ``tracker``,
    or None when ``listen_notifications`` is off.
    """
    g = opts.group(conf)
    if not g.listen_notifications:
        return None
    import oslo_messaging
    targets = [oslo_messaging.Target(topic=t) for t in g.notification_topics]
    return oslo_messaging.get_notification_listener(
        _notification_transport(conf), targets, [tracker],
        executor='threading', pool=PUBLISHER)


def build_engine(conf, store=None, cloud=None, leadership=None,
                 notifier=None, tracker=None):
    """A :class:`.engine.MarketEngine` from ``conf`` (any part may be
    given instead).

    :raises .engine.ConfigError: invalid ``[opie_market]`` settings.
    """
    g = opts.group(conf)
    settings = market_engine.Settings.from_conf(g)
    if store is None:
        store = make_store(conf, sync=True)
    if cloud is None:
        cloud = market_engine.Cloud(make_connection(conf),
                                    g.capacity_source)
    if leadership is None:
        leadership = market_engine.Leadership(opts.coordination_url(conf),
                                              g.member_id)
    if notifier is None:
        notifier = make_notifier(conf)
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
                     market_engine.iso(report.period_start), report.notices,
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
    """The service as configured: engine, tracker and listener."""
    tracker = market_engine.DemandTracker()
    engine = build_engine(conf, tracker=tracker)
    listener = make_listener(conf, tracker)
    return MarketService(engine, opts.group(conf).tick_interval, listener)
