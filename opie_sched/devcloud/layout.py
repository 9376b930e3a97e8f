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
"""The state directory of a devcloud: names, ports, the state file.

Everything a cloud owns is named after its state directory so that two
clouds on one machine never collide: the MariaDB databases share the prefix
:attr:`Layout.db_prefix`, the RabbitMQ vhost is :attr:`Layout.vhost`.
"""

import hashlib
import json
import os
import socket

#: Default state directory (``--state-dir``), overridden by the environment
#: variable ``OPIE_DEVCLOUD_STATE_DIR``.
DEFAULT_STATE_DIR = os.path.join('~', '.local', 'state', 'opie-sched',
                                 'devcloud')

#: The HTTP services and the name of their port in the state file.
HTTP_SERVICES = ('keystone', 'placement', 'glance', 'nova-api', 'neutron',
                 'market-api')

#: The databases of a cloud (suffixes of :attr:`Layout.db_prefix`).
DATABASES = ('keystone', 'placement', 'glance', 'nova_api', 'nova_cell0',
             'nova', 'neutron', 'market')


class StateError(Exception):
    """The state directory is unusable or in an unexpected state."""


def default_state_dir():
    """The state directory used when ``--state-dir`` is not given."""
    return os.path.abspath(os.path.expanduser(
        os.environ.get('OPIE_DEVCLOUD_STATE_DIR') or DEFAULT_STATE_DIR))


#: Ports are taken from here, below Linux's default ephemeral range
#: (32768-60999): a port the kernel hands out as the source of outgoing
#: connections could be taken by the time the service binds it.
PORT_RANGE = (20000, 32000)


def port_free(port, host='127.0.0.1'):
    """Whether ``host:port`` can be bound right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def allocate_ports(names, seed, host='127.0.0.1', is_free=port_free):
    """``{name: port}``: free ports of :data:`PORT_RANGE`, consecutive from
    a start derived from ``seed`` (so a state directory tends to get the
    same ports).

    :raises StateError: no free ports left in the range.
    """
    low, high = PORT_RANGE
    span = high - low
    start = low + int(hashlib.sha1(seed.encode('utf-8')).hexdigest(),
                      16) % (span // 10) * 10
    ports = {}
    candidate = start
    for name in names:
        for _ in range(span):
            port = candidate
            candidate = low + (candidate + 1 - low) % span
            if is_free(port, host):
                ports[name] = port
                break
        else:
            raise StateError('no free TCP port in %d-%d' % PORT_RANGE)
    return ports


class Layout:
    """Paths and names of the cloud kept in ``state_dir``.

    :param state_dir: directory (created by ``up``); made absolute.
    """

    STATE_FILE = 'devcloud.json'

    def __init__(self, state_dir):
        self.root = os.path.abspath(os.path.expanduser(state_dir))
        tag = hashlib.sha1(self.root.encode('utf-8')).hexdigest()[:8]
        #: prefix of every database name: ``opie_<8 hex digits>_``.
        self.db_prefix = 'opie_%s_' % tag
        #: RabbitMQ virtual host of this cloud.
        self.vhost = 'opie-devcloud-%s' % tag

    def path(self, *parts):
        """A path inside the state directory."""
        return os.path.join(self.root, *parts)

    @property
    def etc(self):
        return self.path('etc')

    @property
    def logs(self):
        return self.path('logs')

    @property
    def clouds_yaml(self):
        return self.path('clouds.yaml')

    @property
    def state_file(self):
        return self.path(self.STATE_FILE)

    def log(self, service):
        """The log file of ``service``."""
        return os.path.join(self.logs, '%s.log' % service)

    def database(self, name):
        """The MariaDB database name of ``name`` (one of
        :data:`DATABASES`).
        """
        if name not in DATABASES:
            raise ValueError('unknown database %r' % name)
        return self.db_prefix + name

    def databases(self):
        return [self.database(name) for name in DATABASES]

    def load(self):
        """The state file's content, or ``None`` when there is none.

        :raises StateError: the file exists but is not valid JSON.
        """
        try:
            with open(self.state_file) as f:
                return json.load(f)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise StateError('%s: unreadable state file: %s'
                             % (self.state_file, exc))

    def save(self, state):
        """Write ``state`` (a JSON-able dict) atomically."""
        tmp = self.state_file + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(state, f, indent=2, sort_keys=True)
            f.write('\n')
        os.replace(tmp, self.state_file)
