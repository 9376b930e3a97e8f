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
"""Tests of the market service (opie_sched.services.market.service)."""

import threading
import time

import fixtures
from oslo_config import cfg
import testtools

from opie_sched.services.market import engine
from opie_sched.services.market import opts


# -- the service loop and oslo.messaging -------------------------------------

class ServiceTest(testtools.TestCase):

    def test_loop_survives_a_failing_tick_and_stops(self):
        from opie_sched.services.market import service

        ticks = []
        done = threading.Event()

        class FlakyEngine:
            leadership = None

            def tick(self):
                ticks.append(1)
                if len(ticks) == 1:
                    raise RuntimeError('boom')
                done.set()
                return engine.PeriodReport(period_start=0)

        svc = service.MarketService(FlakyEngine(), interval=0.01)
        with fixtures.FakeLogger() as log:
            svc.start()
            self.assertTrue(done.wait(10))
            svc.stop()
        self.assertGreaterEqual(len(ticks), 2)
        self.assertIn('market tick failed', log.output)

    def test_stop_finishes_the_tick_then_the_listener_and_leadership(self):
        from opie_sched.services.market import service

        events = []
        inside, release = threading.Event(), threading.Event()

        class Leadership:
            def stop(self):
                events.append('leadership stopped')

        class SlowEngine:
            leadership = Leadership()

            def tick(self):
                events.append('tick begins')
                inside.set()
                release.wait(120)
                events.append('tick ends')
                return engine.PeriodReport(period_start=0)

        class Listener:
            def start(self):
                events.append('listener started')

            def stop(self):
                events.append('listener stopped')

            def wait(self):
                pass

        svc = service.MarketService(SlowEngine(), interval=0.0,
                                    listener=Listener())
        svc.start()
        self.assertTrue(inside.wait(120))
        stopper = threading.Thread(target=svc.stop)
        stopper.start()
        svc.wait_for_stop_request()  # from here on, no tick starts
        release.set()
        stopper.join(120)
        self.assertFalse(stopper.is_alive())
        self.assertEqual(['listener started', 'tick begins', 'tick ends',
                          'listener stopped', 'leadership stopped'], events)

    def test_notifications_in_and_out_over_oslo_messaging(self):
        import oslo_messaging

        from opie_sched.services.market import listener
        from opie_sched.services.market import notifications
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        conf([])
        transport = oslo_messaging.get_notification_transport(
            conf, url='fake:/')
        conf.set_override('transport_url', 'fake:/',
                          'oslo_messaging_notifications')
        conf.set_override('driver', ['messaging'],
                          'oslo_messaging_notifications')
        conf.set_override('listen_notifications', True, 'opie_market')
        # out: the market's notifier is enabled by the configured driver
        notifier = notifications.make_notifier(conf)
        self.assertIsNotNone(notifier)
        # in: Nova's versioned notifications feed the demand tracker
        tracker = engine.DemandTracker()
        nova_listener = listener.make_listener(conf, tracker)
        nova_listener.start()
        self.addCleanup(nova_listener.wait)
        self.addCleanup(nova_listener.stop)
        nova = oslo_messaging.Notifier(transport, 'nova-compute:h1',
                                       driver='messaging',
                                       topics=['versioned_notifications'])
        nova.info({}, 'instance.create.end', {'nova_object.data': {
            'uuid': 'n1', 'tenant_id': 'pA', 'state': 'active',
            'flavor': {'nova_object.data': {'vcpus': 1,
                                            'memory_mb': 2000}}}})
        for _ in range(200):
            if tracker.servers():
                break
            time.sleep(0.02)
        self.assertEqual(['n1'], [s.uuid for s in tracker.servers()])
        # no driver: no notifier
        conf.set_override('driver', [], 'oslo_messaging_notifications')
        self.assertIsNone(notifications.make_notifier(conf))
