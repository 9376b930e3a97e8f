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
"""Detached processes of the devcloud and waiting for them.

Every service runs in its own session (process group) with stdout and
stderr appended to its log file, so ``devcloud up`` can exit and
``devcloud down`` (another process) can stop the whole group later.
"""

import os
import signal
import subprocess
import time
import urllib.error
import urllib.request


class ServiceError(Exception):
    """A service failed to start, or exited.

    :param service: the service's name.
    :param message: what went wrong.
    :param log: the service's log file (its tail is shown by the CLI).
    """

    def __init__(self, service, message, log=None):
        super().__init__('%s: %s' % (service, message))
        self.service = service
        self.log = log


def _log(log, argv):
    """``log`` opened for appending (its directory made), after a line
    naming the time and ``argv``.
    """
    os.makedirs(os.path.dirname(log), exist_ok=True)
    out = open(log, 'ab')
    try:
        out.write(('\n==== %s: %s\n' % (
            time.strftime('%Y-%m-%d %H:%M:%S'), ' '.join(argv))).encode())
        out.flush()
    except BaseException:
        out.close()
        raise
    return out


def start(name, argv, log, env=None, cwd=None):
    """Start ``argv`` detached (own session), output appended to ``log``.

    :returns: the pid.
    :raises ServiceError: the program cannot be executed.
    """
    with _log(log, argv) as out:
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, env=env, cwd=cwd,
                start_new_session=True, close_fds=True)
        except OSError as exc:
            raise ServiceError(name, 'cannot run %s: %s' % (argv[0], exc),
                               log)
    return proc.pid


def alive(pid):
    """Whether process ``pid`` exists and is not a zombie."""
    if not pid:
        return False
    try:
        # Reap it if it is our exited child.
        done, _status = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    except ChildProcessError:
        pass
    try:
        with open('/proc/%d/stat' % pid) as f:
            state = f.read().rsplit(')', 1)[1].split()[0]
        return state != 'Z'
    except (OSError, IndexError):
        return False


def group_pids(pgid):
    """The pids of process group ``pgid`` (the service and its workers)."""
    pids = []
    for entry in os.listdir('/proc'):
        if not entry.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % entry) as f:
                fields = f.read().rsplit(')', 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != 'Z':
            pids.append(int(entry))
    return pids


def rss_kib(pids):
    """Sum of the resident set sizes of ``pids``, KiB (``VmRSS``)."""
    total = 0
    for pid in pids:
        try:
            with open('/proc/%d/status' % pid) as f:
                for line in f:
                    if line.startswith('VmRSS:'):
                        total += int(line.split()[1])
                        break
        except OSError:
            continue
    return total


def stop(pid, timeout=15.0):
    """Stop the process group led by ``pid``: SIGTERM, then SIGKILL after
    ``timeout`` seconds. A group already gone is fine.
    """
    if not pid:
        return
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not group_pids(pid) and not alive(pid):
            return
        time.sleep(0.2)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 5
    while group_pids(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive(pid)


def stop_all(pids, timeout=15.0):
    """Stop the process groups led by ``pids`` together: SIGTERM to all,
    SIGKILL to those left after ``timeout`` seconds.

    :returns: the pids that needed SIGKILL.
    """
    pids = [pid for pid in pids if pid]
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + timeout
    left = list(pids)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = [pid for pid in left if alive(pid) or group_pids(pid)]
    for pid in left:
        stop(pid, timeout=0)
    return left


def wait_for(what, check, timeout, pids=(), interval=0.5):
    """Call ``check()`` until it returns a true value (returned).

    :param what: ``(service, log)`` named in the error.
    :param check: callable; exceptions count as "not yet".
    :param timeout: seconds.
    :param pids: processes that must stay alive meanwhile.
    :raises ServiceError: a pid died, or the time ran out (the last
        exception, if any, in the message).
    """
    service, log = what
    deadline = time.monotonic() + timeout
    last = None
    while True:
        for pid in pids:
            if not alive(pid):
                raise ServiceError(service, 'exited during start-up', log)
        try:
            result = check()
            if result:
                return result
        except Exception as exc:  # noqa: B902 - any failure means "not yet"
            last = exc
        if time.monotonic() >= deadline:
            raise ServiceError(
                service, 'not ready after %d s%s' % (
                    timeout, ': %s' % last if last else ''), log)
        time.sleep(interval)


def http_answers(url, timeout=5.0):
    """Whether ``url`` answers HTTP (any status below 500)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status < 500
    except urllib.error.HTTPError as exc:
        return exc.code < 500


def tail(path, lines=30):
    """The last ``lines`` lines of ``path`` (text), or a note."""
    try:
        with open(path, 'rb') as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read().decode('utf-8', 'replace')
    except OSError as exc:
        return '(no log: %s)' % exc
    return '\n'.join(data.splitlines()[-lines:])


def run(argv, log, env=None, timeout=600, name=None):
    """Run a one-shot command to completion, output appended to ``log``.

    :raises ServiceError: non-zero exit or timeout.
    """
    name = name or os.path.basename(argv[0])
    with _log(log, argv) as out:
        try:
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out,
                                  stderr=subprocess.STDOUT, env=env,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ServiceError(name, 'timed out after %d s' % timeout, log)
        except OSError as exc:
            raise ServiceError(name, 'cannot run %s: %s' % (argv[0], exc),
                               log)
    if proc.returncode:
        raise ServiceError(name, '%s exited with %d' % (
            ' '.join(argv[:3]), proc.returncode), log)
