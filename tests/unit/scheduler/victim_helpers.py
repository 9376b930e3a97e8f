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
"""Nova Flavor and Instance objects of preemptible victims, shared by the
tests of ownership, reservations and actions (and the preemption
behaviours' tests)."""

import datetime

from nova import objects

from opie_sched.common import flavors


objects.register_all()

NOW = datetime.datetime(2026, 11, 23, 12, 0, 0,
                        tzinfo=datetime.timezone.utc)


def flavor(vcpus, ram, root, preemptible=True, ephemeral=0, swap=0):
    specs = flavors.preemptible_extra_specs(
        vcpus, ram, flavors.disk_gb(root, ephemeral, swap)) \
        if preemptible else {}
    return objects.Flavor(vcpus=vcpus, memory_mb=ram, root_gb=root,
                          ephemeral_gb=ephemeral, swap=swap,
                          extra_specs=specs)


def instance(uuid, flv, metadata=None, sysmeta=None, image_ref='img',
             task_state=None, vm_state='active'):
    return objects.Instance(
        uuid=uuid, host='h', node='h', flavor=flv, launched_at=NOW,
        metadata=metadata or {}, system_metadata=sysmeta or {},
        task_state=task_state, vm_state=vm_state, display_name=uuid,
        project_id='p', image_ref=image_ref)
