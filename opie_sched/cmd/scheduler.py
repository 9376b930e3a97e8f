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
"""``opie-scheduler``: nova-scheduler with the opie manager.

A drop-in replacement for the ``nova-scheduler`` console script (same
configuration files and arguments): Nova (31 to 34) has no pluggable
scheduler driver, so the only way to run the preemption phase inside the
scheduler is to start the scheduler service with
:class:`OpieSchedulerManager`.

It refuses to start (exit code 1, ERROR logged) when its locks would be
tooz's file driver -- ``[opie_preemption] coordination_url`` unset or
``file://`` -- while a scheduler service of another host is up: file locks
exclude the workers of one host only
(:func:`opie_sched.scheduler.locks.check_shared_backend`), and when the
lock directory would fall inside a Python install directory.
"""

# Patch before anything else, as the installed nova's own nova-scheduler
# does (native threads on nova 33 and 34, eventlet on 31 and 32 unless
# OS_NOVA_DISABLE_EVENTLET_PATCHING says otherwise).
from opie_sched.common import compat; compat.patch_nova_service()  # noqa

import sys  # noqa: E402

from oslo_concurrency import processutils  # noqa: E402
from oslo_log import log as logging  # noqa: E402

import nova.conf  # noqa: E402
from nova import config  # noqa: E402
from nova import objects  # noqa: E402
from nova.scheduler import rpcapi  # noqa: E402
from nova import service  # noqa: E402

from opie_sched import conf as opie_conf  # noqa: E402
from opie_sched.conf import validation  # noqa: E402

CONF = nova.conf.CONF
LOG = logging.getLogger(__name__)
MANAGER = 'opie_sched.scheduler.manager.OpieSchedulerManager'


def main():
    opie_conf.register_opts(CONF)
    config.parse_args(sys.argv)
    logging.setup(CONF, 'nova')
    validation.validate(CONF)  # one line, exit 1 (cmd/launch.py)
    objects.register_all()
    objects.Service.enable_min_version_cache()
    from opie_sched.scheduler import locks
    error = locks.startup_error(CONF)
    if error:
        LOG.error('opie-scheduler refuses to start: %s', error)
        return 1
    server = service.Service.create(binary='nova-scheduler',
                                    topic=rpcapi.RPC_TOPIC,
                                    manager=MANAGER)
    workers = CONF.scheduler.workers or processutils.get_worker_count()
    # Worker processes are forked: let each build its own executors.
    compat.reset_executors()
    service.serve(server, workers=workers)
    service.wait()
