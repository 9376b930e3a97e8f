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
"""Helpers shared by the tests of this package."""

import types

from oslo_config import cfg

from opie_sched.conf import repacker as opts
from opie_sched.rpm import model as rpm
from opie_sched.rpm import planner as pl


#: The paper's host (8 vCPU, 16000 MB) and flavors (vCPU, MB).
SIZES = {'small': (1, 2000), 'medium': (2, 4000), 'large': (4, 8000)}


def inst(id, flavor='small', preemptible=False, **kw):
    vcpus, ram = SIZES[flavor]
    return pl.Instance(id, id, vcpus, ram, preemptible, **kw)


def host(name, instances=(), samples=10, cpu=None, mem=None, **kw):
    """A host whose history is ``samples`` copies of its current load
    (or of ``cpu``/``mem`` when given).
    """
    insts = tuple(instances)
    c = sum(i.cpu for i in insts) / 8.0 if cpu is None else cpu
    m = sum(i.memory for i in insts) / 16000.0 if mem is None else mem
    return pl.Host(name, 8, 16000, insts, (c,) * samples, (m,) * samples,
                   **kw)


def moves(plan):
    return [(m.server, m.source, m.destination, m.reason)
            for m in plan.moves]


# -- fakes of openstacksdk ----------------------------------------------------

class FakeCompute:
    """Servers ``{id: host}``; migrations land at once unless the
    destination is in ``fail``.
    """

    def __init__(self, servers, fail=()):
        self.hosts = dict(servers)
        self.fail = set(fail)
        self.calls = []

    def live_migrate_server(self, server, host=None, block_migration=None):
        self.calls.append((server, host, block_migration))
        if host == 'boom':
            raise RuntimeError('HTTP 400: no\nmore')
        if host not in self.fail:
            self.hosts[server] = host

    def get_server(self, server):
        return types.SimpleNamespace(status='ACTIVE', task_state=None,
                                     compute_host=self.hosts[server])


class FakeConn:
    def __init__(self, servers, fail=()):
        self.compute = FakeCompute(servers, fail)


def move(server, src, dst):
    return pl.Move(server, server, src, dst, 'underload', 0.1,
                   rpm.Terms(0, 0, 0, 0, 0), 1.0, False)


def make_conf(tmp, **overrides):
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    conf([], project='opie_sched')
    conf.set_override('state_dir', tmp, group=opts.GROUP)
    for k, v in overrides.items():
        conf.set_override(k, v, group=opts.GROUP)
    return conf


class FakeCollector:
    def __init__(self, hosts):
        self._hosts = hosts

    def sample(self, interval):
        return self._hosts
