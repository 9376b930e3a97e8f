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
"""``python -m opie_sched.devcloud.compute``: nova-compute with nova's
fake driver (``fake.FakeDriverWithoutFakeNodes``, a subclass of
``fake.FakeDriver`` with a stable node identity) sized by the environment.

nova loads a virt driver only from the ``nova.virt`` package, so the sizes
cannot come from an out-of-tree driver class; this entry point sets the
class attributes nova's fake driver reports (as
:class:`opie_sched.demo.fake_driver.SizedFakeHosts` does in process) and
then runs nova's own ``nova-compute`` main. Variables:
``OPIE_DEVCLOUD_VCPUS`` (vCPUs), ``OPIE_DEVCLOUD_RAM_MB`` (MB) and
``OPIE_DEVCLOUD_DISK_GB`` (GB); unset ones keep nova's values.
"""

import os
import sys

SIZES = (('OPIE_DEVCLOUD_VCPUS', 'vcpus'),
         ('OPIE_DEVCLOUD_RAM_MB', 'memory_mb'),
         ('OPIE_DEVCLOUD_DISK_GB', 'local_gb'))


def size_fake_driver(driver_class, environ):
    """Set ``driver_class``'s sizes from ``environ``.

    :raises ValueError: a variable that is not a positive integer.
    """
    for variable, attr in SIZES:
        value = environ.get(variable)
        if value is None:
            continue
        number = int(value)
        if number < 1:
            raise ValueError('%s must be >= 1, got %r' % (variable, value))
        setattr(driver_class, attr, number)


def main():
    # nova.cmd.compute selects the threading/eventlet mode on import.
    from nova.cmd import compute
    from nova.virt import fake
    size_fake_driver(fake.FakeDriver, os.environ)
    sys.argv[0] = 'nova-compute'
    return compute.main()


if __name__ == '__main__':
    sys.exit(main())
