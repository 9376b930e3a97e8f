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
"""Faults injected into a running devcloud (the Tempest chaos tier).

Everything is found through the cloud's state directory: the services'
process groups and logs (``devcloud.json``), the RabbitMQ vhost and the
MariaDB databases named after it (:class:`~.layout.Layout`). Nothing here
touches another cloud on the same machine: connections are closed only in
this cloud's vhost and killed only on this cloud's databases.

* :meth:`Faults.kill`, :meth:`Faults.freeze`, :meth:`Faults.thaw` - signals
  to one process or a service's whole process group;
* :meth:`Faults.restart` - start a service again (after a kill, or with
  extra arguments), recorded in the state file so ``devcloud down`` stops
  the new process;
* :class:`LogWatch` - wait for a line in a service's log, and the pid of
  the process that wrote it (oslo.log's third field);
* :meth:`Faults.close_broker_connections` - ``rabbitmqctl
  close_all_connections`` for the cloud's vhost;
* :meth:`Faults.kill_database_connections` - ``KILL CONNECTION`` for every
  connection using one of the cloud's databases.
"""

import datetime
import os
import re
import signal
import subprocess
import time

from opie_sched.devcloud import config
from opie_sched.devcloud import layout as layout_mod
from opie_sched.devcloud import process

#: oslo.log's default line: date, time, pid, level, logger, ...
_OSLO_LINE = re.compile(
    r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) (\d+) ')


class FaultError(Exception):
    """A fault could not be injected (no such service, tool failed)."""


def pid_of(line):
    """The pid of the process that wrote an oslo.log ``line``, or None."""
    match = _OSLO_LINE.match(line)
    return int(match.group(2)) if match else None


def time_of(line):
    """When an oslo.log ``line`` was written (seconds since the epoch, as
    ``time.time()``; the line's local time), or None.
    """
    match = _OSLO_LINE.match(line)
    if not match:
        return None
    return datetime.datetime.strptime(
        match.group(1), '%Y-%m-%d %H:%M:%S.%f').timestamp()


class LogWatch:
    """New lines of log files from the moment the watch is made.

    :param paths: a log file or a list of them (services' logs, from the
        state directory); the lines of several files are read file after
        file.
    """

    def __init__(self, paths):
        self.paths = [paths] if isinstance(paths, str) else list(paths)
        self.offsets = {}
        for path in self.paths:
            try:
                self.offsets[path] = os.path.getsize(path)
            except OSError:
                self.offsets[path] = 0
        self._partial = dict.fromkeys(self.paths, '')
        self._unread = []

    def lines(self):
        """The complete lines written since the last call (and those a
        :meth:`wait_for` read but did not consume).
        """
        lines, self._unread = self._unread, []
        for path in self.paths:
            try:
                with open(path, 'rb') as f:
                    f.seek(self.offsets[path])
                    data = f.read()
            except OSError:
                continue
            self.offsets[path] += len(data)
            text = self._partial[path] + data.decode('utf-8', 'replace')
            new = text.split('\n')
            self._partial[path] = new.pop()
            lines += new
        return lines

    def wait_for(self, pattern, timeout, interval=0.005):
        """The next line matching ``pattern`` (a regex), read every
        ``interval`` seconds for at most ``timeout`` seconds; the lines
        after it stay for the next call.

        :returns: ``(line, seconds waited)``.
        :raises FaultError: no such line in time.
        """
        regex = re.compile(pattern)
        start = time.monotonic()
        while True:
            lines = self.lines()
            for index, line in enumerate(lines):
                if regex.search(line):
                    self._unread = lines[index + 1:]
                    return line, time.monotonic() - start
            if time.monotonic() - start > timeout:
                raise FaultError('no line matching %r in %s within %d s'
                                 % (pattern, ', '.join(self.paths),
                                    timeout))
            time.sleep(interval)


class Faults:
    """Fault injection into the devcloud of ``state_dir``.

    :raises FaultError: no devcloud state in ``state_dir``.
    """

    def __init__(self, state_dir):
        self.layout = layout_mod.Layout(state_dir)
        state = self.layout.load()
        if not state or not state.get('services'):
            raise FaultError('no devcloud in %s' % self.layout.root)
        self.settings = config.Settings.from_dict(state['settings'])

    def _service(self, name):
        services = (self.layout.load() or {}).get('services', {})
        if name not in services:
            raise FaultError('the devcloud of %s has no service %s (it '
                             'has %s)' % (self.layout.root, name,
                                          ', '.join(sorted(services))))
        return services[name]

    def services(self, prefix):
        """Names of the services called ``prefix`` or ``prefix-*`` (e.g.
        every opie-scheduler of a cloud with several scheduler hosts).
        """
        services = (self.layout.load() or {}).get('services', {})
        return sorted(n for n in services
                      if n == prefix or n.startswith(prefix + '-'))

    def log(self, name):
        """The log file of service ``name``."""
        return self._service(name)['log']

    def watch(self, *names):
        """A :class:`LogWatch` on the logs of services ``names``, from
        now.
        """
        return LogWatch([self.log(name) for name in names])

    def processes(self, name):
        """Pids of service ``name``'s process group (leader first)."""
        leader = self._service(name)['pid']
        pids = sorted(process.group_pids(leader))
        if leader in pids:
            pids.remove(leader)
            pids.insert(0, leader)
        return pids

    def workers(self, name):
        """Pids of the forked workers of service ``name`` (its group
        without the leader).
        """
        return self.processes(name)[1:]

    @staticmethod
    def signal(pid, sig):
        """Send ``sig`` to process ``pid``; False when it is gone."""
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return False
        return True

    def kill(self, pid):
        """SIGKILL one process."""
        return self.signal(pid, signal.SIGKILL)

    def _group_signal(self, name, sig):
        pid = self._service(name)['pid']
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return False
        return True

    def freeze(self, name):
        """SIGSTOP every process of service ``name``."""
        return self._group_signal(name, signal.SIGSTOP)

    def thaw(self, name):
        """SIGCONT every process of service ``name``."""
        return self._group_signal(name, signal.SIGCONT)

    def kill_service(self, name, timeout=5.0):
        """SIGKILL service ``name``'s whole group and wait until it is
        gone (a stopped process dies on SIGKILL too).
        """
        pid = self._service(name)['pid']
        self._group_signal(name, signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while process.group_pids(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        process.alive(pid)
        if process.group_pids(pid):
            raise FaultError('%s still has processes %s after SIGKILL'
                             % (name, process.group_pids(pid)))

    def restart(self, name, extra_args=(), argv=None):
        """Stop service ``name`` (if running) and start it again with its
        recorded command line, or ``argv``, plus ``extra_args``; the new
        pid and command line are saved in the state file.

        :returns: ``(pid, argv)`` of the new process.
        """
        from opie_sched.devcloud import cloud
        svc = self._service(name)
        process.stop(svc['pid'])
        argv = list(argv or svc['argv']) + list(extra_args)
        env = cloud.daemons(self.settings, self.layout).get(
            name, (None, cloud.service_env(self.layout)))[1]
        pid = process.start(name, argv, svc['log'], env=env)
        state = self.layout.load()
        state['services'][name].update(pid=pid, argv=argv)
        self.layout.save(state)
        return pid, argv

    def overlay(self, name, sections):
        """Write ``sections`` (``{group: {option: value}}``) as a config
        file of the state directory, ``etc/chaos-<name>.conf``; returns
        its path (for ``--config-file``).
        """
        path = os.path.join(self.layout.etc, 'chaos-%s.conf' % name)
        with open(path, 'w') as f:
            f.write(config.render(sections))
        return path

    # -- RabbitMQ -----------------------------------------------------------

    def close_broker_connections(self, reason='opie chaos tier'):
        """Close every client connection of the cloud's vhost (the
        services see a broker restart); returns how many were closed.
        ``rabbitmqctl`` takes one to two seconds.
        """
        proc = subprocess.run(
            ['rabbitmqctl', 'close_all_connections', '--vhost',
             self.layout.vhost, reason],
            capture_output=True, text=True, timeout=60)
        if proc.returncode:
            raise FaultError('rabbitmqctl close_all_connections failed: %s'
                             % proc.stderr.strip())
        match = re.search(r'Closed (\d+) connection', proc.stdout)
        return int(match.group(1)) if match else 0

    # -- MariaDB ------------------------------------------------------------

    def kill_database_connections(self):
        """``KILL CONNECTION`` every connection whose current database is
        one of the cloud's (name prefix :attr:`Layout.db_prefix`);
        returns how many were killed (queries in flight fail with "lost
        connection", idle pooled connections are found dead at their
        next use).
        """
        from opie_sched.devcloud import bootstrap
        conn = bootstrap._mysql(self.settings)
        killed = 0
        try:
            with conn.cursor() as cur:
                cur.execute('SELECT CONNECTION_ID()')
                own = cur.fetchone()[0]
                cur.execute('SELECT ID, DB FROM '
                            'information_schema.PROCESSLIST')
                rows = cur.fetchall()
                for conn_id, db in rows:
                    if conn_id == own or not (db or '').startswith(
                            self.layout.db_prefix):
                        continue
                    try:
                        cur.execute('KILL CONNECTION %d' % int(conn_id))
                        killed += 1
                    except Exception as exc:
                        # Gone meanwhile (error 1094: unknown thread).
                        if 'Unknown thread' not in str(exc):
                            raise
        finally:
            conn.close()
        return killed
