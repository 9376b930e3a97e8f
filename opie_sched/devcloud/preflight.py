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
"""What ``devcloud up`` needs on the machine, checked before anything is
started: MariaDB, RabbitMQ (and ``rabbitmqctl``), the Python packages and
the programs of the services.
"""

import importlib.util
import os
import shutil
import socket
import sys

#: Python packages (import name -> distribution to install).
PACKAGES = {
    'keystone': 'keystone',
    'glance': 'glance',
    'placement': 'openstack-placement',
    'nova': 'nova',
    'gunicorn': 'gunicorn',
    'pymysql': 'PyMySQL',
    'openstack': 'openstacksdk',
    'openstackclient': 'python-openstackclient',
}

#: Programs run by ``up`` (looked up beside the Python interpreter first).
PROGRAMS = ('keystone-manage', 'glance-manage', 'placement-manage',
            'nova-manage', 'nova-conductor', 'opie-scheduler', 'opie-market',
            'opie-sched', 'gunicorn')

INSTALL_HINT = ("install them with: pip install -c "
                "tools/devcloud-constraints.txt "
                "-e '.[devcloud,market,repacker]' "
                "(or use: tox -e devcloud -- up)")


class MissingError(Exception):
    """Something ``up`` needs is missing; the message names all of it."""


def bin_path(program):
    """The path of ``program``: beside ``sys.executable``, else on PATH;
    ``None`` when absent.
    """
    local = os.path.join(os.path.dirname(sys.executable), program)
    if os.access(local, os.X_OK):
        return local
    return shutil.which(program)


def tcp_open(host, port, timeout=3.0):
    """Whether a TCP connection to ``host:port`` succeeds."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def mariadb_problem(host='127.0.0.1', port=3306, user='root'):
    """``None`` when MariaDB accepts ``user`` without password, else why."""
    if not tcp_open(host, port):
        return ('MariaDB/MySQL is not reachable on %s:%d (start it, e.g. '
                'service mariadb start)' % (host, port))
    try:
        import pymysql
    except ImportError:
        return None  # reported as a missing package
    try:
        pymysql.connect(host=host, port=port, user=user,
                        connect_timeout=5).close()
    except pymysql.MySQLError as exc:
        return ('MariaDB on %s:%d refuses user %s without password: %s'
                % (host, port, user, exc))
    return None


def rabbitmq_problem(host='127.0.0.1', port=5672):
    """``None`` when RabbitMQ listens and ``rabbitmqctl`` exists."""
    if not tcp_open(host, port):
        return ('RabbitMQ is not reachable on %s:%d (start it, e.g. '
                'service rabbitmq-server start)' % (host, port))
    if not shutil.which('rabbitmqctl'):
        return ('rabbitmqctl not found on PATH: needed to create the '
                "cloud's RabbitMQ vhost")
    return None


def redis_problem(host='127.0.0.1', port=6379):
    """``None`` when Redis listens (the locks of several scheduler
    hosts), else why.
    """
    if not tcp_open(host, port):
        return ('Redis is not reachable on %s:%d: several scheduler hosts '
                'share their locks there (start it, e.g. service '
                'redis-server start, or use --scheduler-hosts 1)'
                % (host, port))
    return None


def missing_packages(packages=None):
    """Distributions whose import name cannot be found."""
    packages = PACKAGES if packages is None else packages
    return sorted(dist for name, dist in packages.items()
                  if importlib.util.find_spec(name) is None)


def missing_programs(programs=PROGRAMS):
    return [p for p in programs if bin_path(p) is None]


def check(mysql_host='127.0.0.1', mysql_port=3306, rabbit_host='127.0.0.1',
          rabbit_port=5672, neutron=False, redis=False):
    """Check everything; raise one error listing every problem.

    :param neutron: whether the neutron package is needed (real
        neutron-server).
    :param redis: whether Redis and the ``redis`` package are needed
        (several scheduler hosts).

    :raises MissingError: something is missing (the message names it).
    """
    problems = []
    packages = missing_packages()
    if neutron:
        packages += missing_packages({'neutron': 'neutron'})
    if redis:
        packages += missing_packages({'redis': 'redis'})
    if packages:
        problems.append('Python packages missing: %s; %s'
                        % (', '.join(packages), INSTALL_HINT))
    programs = missing_programs(PROGRAMS + (
        ('neutron-db-manage',) if neutron else ()))
    if programs and not packages:
        problems.append('programs missing: %s; %s'
                        % (', '.join(programs), INSTALL_HINT))
    for problem in (mariadb_problem(mysql_host, mysql_port),
                    rabbitmq_problem(rabbit_host, rabbit_port),
                    redis_problem() if redis else None):
        if problem:
            problems.append(problem)
    if problems:
        raise MissingError('cannot start a devcloud: ' + '; '.join(problems))
