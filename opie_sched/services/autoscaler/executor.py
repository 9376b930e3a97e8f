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
"""Make-before-break execution of a VM set change through openstacksdk.

Thesis Paper V, 3.2: a transition from the running set to a target set
first starts the servers the target adds -- while the old set keeps
serving --, waits until every one of them is ACTIVE (and, optionally,
answers a health URL), and only then stops the surplus. Running servers are
reused wherever the target keeps servers of their flavor
(:func:`opie_sched.flavormix.transition`).

Guarantees of :meth:`Executor.execute`:

* Nothing is deleted before every new server is ACTIVE and healthy.
* A failed boot (ERROR state, boot timeout, vanished server, API error)
  rolls back: every server booted by this transition is deleted and the old
  set is left untouched, so the application keeps the capacity it had.
* Before the surplus is deleted the application's servers are listed
  again; if deleting the surplus would leave less than the ``floor``
  capacity (``C_req``, or the budget-capped target capacity), the surplus
  is kept and the outcome says so.

Only ACTIVE servers of the application's declared flavors count as
capacity; others (BUILD, ERROR, foreign flavors) are left alone and
reported.
"""

import dataclasses
import logging
import time
import uuid

from opie_sched import flavormix

LOG = logging.getLogger(__name__)

#: Seconds of the last wait when the shared boot deadline has passed (one
#: more status poll rather than none).
_MIN_WAIT = 0.1

#: Metadata key set on every server the autoscaler boots (the app name).
METADATA_KEY = 'opie:autoscaler'


class BootFailure(Exception):
    """A new server did not become ACTIVE and healthy (message says why)."""


def set_text(counts):
    """``'a x2, b x1'`` for ``{flavor: count}`` (``'none'`` when empty)."""
    return ', '.join('%s x%d' % kv for kv in sorted(counts.items())) or 'none'


def flavor_name(server):
    """The flavor name of a server (API 2.47+ embeds it), or None."""
    flavor = getattr(server, 'flavor', None)
    if flavor is None:
        return None
    if isinstance(flavor, dict):
        return flavor.get('original_name') or flavor.get('name')
    return (getattr(flavor, 'original_name', None)
            or getattr(flavor, 'name', None))


def first_address(server):
    """The server's first IP address (IPv4 preferred), or None."""
    found = []
    for addrs in (getattr(server, 'addresses', None) or {}).values():
        for a in addrs or ():
            if a.get('addr'):
                found.append((a.get('version') != 4, a['addr']))
    return min(found)[1] if found else None


@dataclasses.dataclass
class Inventory:
    """An application's servers as listed now.

    :param counts: ``{flavor: n}`` of ACTIVE servers of declared flavors.
    :param servers: ``{flavor: [server, ...]}`` of those servers.
    :param ignored: ``[(id, name, status, flavor)]`` of the others.
    """

    counts: dict
    servers: dict
    ignored: list


@dataclasses.dataclass
class Outcome:
    """What one round did for one application.

    ``action`` is one of ``'none'`` (already at the target), ``'dry-run'``,
    ``'reconfigured'``, ``'rolled-back'`` (a boot failed, old set kept),
    ``'surplus-kept'`` (new servers up, surplus not deleted to protect
    the floor), ``'kept'`` (demand or declaration unusable: nothing done),
    ``'locked'`` (another replica holds the application's lock) or
    ``'error'``. ``saving_per_hour`` is ``price(before) - price(target)``,
    currency per hour (negative for a scale-out).
    """

    app: str
    action: str
    reason: str = ''
    before: dict = dataclasses.field(default_factory=dict)
    target: dict = dataclasses.field(default_factory=dict)
    started: list = dataclasses.field(default_factory=list)
    stopped: list = dataclasses.field(default_factory=list)
    saving_per_hour: float = None
    plan: dict = None


class Executor:
    """Boot, wait, roll back and delete servers of an application.

    :param conn: an ``openstack.connection.Connection`` (or an object with
        the same ``compute`` methods: ``get_server_group``, ``servers``,
        ``create_server``, ``get_server``, ``delete_server`` and the
        waiters ``wait_for_server``, ``wait_for_delete``).
    :param boot_timeout: seconds for a new server to get ACTIVE and healthy.
    :param delete_timeout: seconds for a deleted server to disappear.
    :param poll_interval: seconds between status polls (the waiters'
        ``interval``) and between health requests.
    :param health_timeout: seconds per health request.
    :param observer: optional ``observer(event, server_id)`` called after
        each server is up (``'up'``), gone (``'deleted'``) and after a
        rollback (``'rolled-back'``, None) -- for tests and audits.
    """

    def __init__(self, conn, boot_timeout=600.0, delete_timeout=300.0,
                 poll_interval=2.0, health_timeout=5.0, observer=None,
                 clock=time.monotonic, sleep=None, http=None):
        self.conn = conn
        self.boot_timeout = boot_timeout
        self.delete_timeout = delete_timeout
        self.poll_interval = poll_interval
        self.health_timeout = health_timeout
        self.observer = observer
        self._clock = clock
        # time.sleep looked up at call time: a green (monkey-patched)
        # sleep must not be bypassed by a reference taken at import.
        self._sleep = sleep or (lambda seconds: time.sleep(seconds))
        self._http = http

    # -- listing ----------------------------------------------------------

    def inventory(self, app, resolved):
        """The application's servers now (:class:`Inventory`)."""
        if resolved.group_id:
            group = self.conn.compute.get_server_group(resolved.group_id)
            members = set(getattr(group, 'member_ids', None) or ())
            servers = [s for s in self.conn.compute.servers(details=True)
                       if s.id in members]
        else:
            servers = list(self.conn.compute.servers(details=True,
                                                     tags=app.tag))
        declared = {f.name for f in app.flavors}
        counts, by_flavor, ignored = {}, {}, []
        for s in sorted(servers, key=lambda s: s.id):
            fname = flavor_name(s)
            if s.status == 'ACTIVE' and fname in declared:
                counts[fname] = counts.get(fname, 0) + 1
                by_flavor.setdefault(fname, []).append(s)
            else:
                ignored.append((s.id, s.name, s.status, fname))
        return Inventory(counts, by_flavor, ignored)

    # -- execution --------------------------------------------------------

    def execute(self, app, resolved, inv, target, floor, summary='',
                dry_run=False, health_url=None, boot_timeout=None):
        """Move ``app`` from ``inv`` to ``target``, make-before-break.

        :param inv: the :class:`Inventory` the plan was made on.
        :param target: ``{flavor: count}`` to run.
        :param floor: capacity (the capacities' unit) the application must
            keep after the surplus is deleted.
        :param summary: the plan's description (prices, predicted saving),
            logged with the outcome.
        :param health_url: optional URL template (``{address}``, ``{id}``,
            ``{name}``) each new server must answer with 2xx.
        :returns: :class:`Outcome`.
        """
        keep, start, stop = flavormix.transition(inv.counts, target)
        types = resolved.types
        steps = 'start %s; stop %s; keep %s' % (
            set_text(start), set_text(stop), set_text(keep))
        out = Outcome(app=app.name, action='none', before=dict(inv.counts),
                      target=dict(target))
        if not start and not stop:
            out.reason = 'already at the target set'
            return out
        if dry_run:
            out.action = 'dry-run'
            out.reason = steps
            LOG.info('Application %s [dry-run]: would %s. %s',
                     app.name, steps, summary)
            return out

        LOG.info('Application %s: reconfiguring %s -> %s (%s). %s',
                 app.name, set_text(inv.counts), set_text(target), steps,
                 summary)
        booted = []
        try:
            for fname, n in sorted(start.items()):
                for _ in range(n):
                    server = self.conn.compute.create_server(
                        **self._boot_attrs(app, resolved, fname))
                    booted.append(server)
                    LOG.info('Application %s: booting %s (%s) %s',
                             app.name, server.id, fname,
                             getattr(server, 'name', ''))
            self._wait_up(app, booted, health_url,
                          self.boot_timeout if boot_timeout is None
                          else boot_timeout)
        except Exception as exc:
            why = _one_line(exc)
        else:
            why = None
        if why is not None:
            left = self._rollback(app, booted)
            out.action = 'rolled-back'
            out.started = []
            out.reason = ('boot failed: %s; rolled back (%d new server(s) '
                          'deleted%s), old set %s kept' % (
                              why, len(booted) - len(left),
                              ', could not delete %s' % ', '.join(left)
                              if left else '', set_text(inv.counts)))
            LOG.error('Application %s: %s', app.name, out.reason)
            return out
        out.started = [s.id for s in booted]
        booted_ids = set(out.started)

        live = self.inventory(app, resolved)
        victims = []
        for fname, n in sorted(stop.items()):
            old = [s for s in live.servers.get(fname, ())
                   if s.id not in booted_ids]
            old.sort(key=lambda s: (str(getattr(s, 'created_at', '') or ''),
                                    s.id), reverse=True)
            victims.extend(old[:n])
        after = dict(live.counts)
        for v in victims:
            after[flavor_name(v)] -= 1
        after = {k: n for k, n in after.items() if n}
        remaining = flavormix.set_capacity(types, after)
        if remaining < floor:
            out.action = 'surplus-kept'
            out.reason = ('deleting %s would leave capacity %g < %g (the '
                          'set changed meanwhile: %s); surplus kept'
                          % (set_text(stop), remaining, floor,
                             set_text(live.counts)))
            LOG.warning('Application %s: %s', app.name, out.reason)
            return out
        failed = []
        for v in victims:
            try:
                self.conn.compute.delete_server(v.id, ignore_missing=True)
                self._wait_gone(v)
                out.stopped.append(v.id)
                LOG.info('Application %s: deleted %s (%s)', app.name, v.id,
                         flavor_name(v))
                self._notify('deleted', v.id)
            except Exception as exc:
                failed.append('%s (%s)' % (v.id, _one_line(exc)))
        out.action = 'reconfigured'
        out.reason = steps
        if failed:
            out.reason += '; could not delete %s' % ', '.join(failed)
            LOG.warning('Application %s: could not delete %s', app.name,
                        ', '.join(failed))
        LOG.info('Application %s: reconfigured to %s. %s', app.name,
                 set_text(after), summary)
        return out

    # -- helpers ----------------------------------------------------------

    def _notify(self, event, server_id):
        if self.observer is not None:
            self.observer(event, server_id)

    @staticmethod
    def _boot_attrs(app, resolved, fname):
        attrs = {
            'name': '%s-%s-%s' % (app.name, fname, uuid.uuid4().hex[:8]),
            'flavor_id': resolved.flavor_ids[fname],
            'image_id': resolved.image_id,
            'networks': (app.networks if isinstance(app.networks, str)
                         else [{'uuid': n} for n in app.networks]),
            'metadata': {METADATA_KEY: app.name},
        }
        if resolved.group_id:
            attrs['scheduler_hints'] = {'group': resolved.group_id}
        if app.tag:
            attrs['tags'] = [app.tag]
        return attrs

    def _wait_up(self, app, servers, health_url, timeout):
        """Wait until every server is ACTIVE (and healthy).

        The status is polled by openstacksdk's ``compute.wait_for_server``
        (one shared deadline for all servers); the health URL, which no
        openstacksdk waiter covers, by :meth:`_wait_healthy`.

        :param servers: the servers (openstacksdk resources) to wait on.
        :param timeout: seconds for all of them together.
        :raises BootFailure: ERROR, vanished or timeout.
        """
        from openstack import exceptions as sdk_exc
        deadline = self._clock() + timeout
        for i, server in enumerate(servers):
            sid = server.id
            try:
                server = self.conn.compute.wait_for_server(
                    server, status='ACTIVE', failures=['ERROR'],
                    interval=self.poll_interval,
                    wait=max(deadline - self._clock(), _MIN_WAIT))
            except sdk_exc.ResourceNotFound:
                raise BootFailure('server %s disappeared' % sid)
            except sdk_exc.ResourceFailure:
                raise BootFailure('server %s went to ERROR%s' % (
                    sid, self._fault(sid)))
            except sdk_exc.ResourceTimeout:
                raise BootFailure('server(s) %s not %s after %g s' % (
                    ', '.join(s.id for s in servers[i:]),
                    'ACTIVE and healthy' if health_url else 'ACTIVE',
                    timeout))
            if health_url and not self._wait_healthy(server, health_url,
                                                     deadline):
                raise BootFailure('server(s) %s not ACTIVE and healthy '
                                  'after %g s' % (sid, timeout))
            LOG.info('Application %s: server %s is up', app.name, sid)
            self._notify('up', sid)

    def _fault(self, sid):
        """``': <fault message>'`` of an ERROR server, or ``''``."""
        try:
            server = self.conn.compute.get_server(sid)
        except Exception:
            return ''
        fault = getattr(server, 'fault', None) or {}
        return ': %s' % fault['message'] if fault.get('message') else ''

    def _wait_healthy(self, server, template, deadline):
        """True once the health URL answers 2xx, False at the deadline."""
        while not self._healthy(server, template):
            if self._clock() >= deadline:
                return False
            self._sleep(self.poll_interval)
        return True

    def _healthy(self, server, template):
        address = first_address(server)
        if '{address}' in template and address is None:
            return False
        url = template.format(address=address, id=server.id,
                              name=server.name)
        http = self._http
        if http is None:
            import requests
            http = requests
        try:
            resp = http.get(url, timeout=self.health_timeout)
        except Exception as exc:
            LOG.debug('Health check %s failed: %s', url, exc)
            return False
        return 200 <= resp.status_code < 300

    def _wait_gone(self, server):
        """Wait until a deleted server is gone (openstacksdk's
        ``compute.wait_for_delete``: 404 or DELETED).

        A SOFT_DELETED server (a cloud with ``reclaim_instance_interval``)
        counts as gone too, as Nova no longer runs it.

        :raises TimeoutError: still there after ``delete_timeout`` seconds.
        """
        from openstack import exceptions as sdk_exc
        try:
            self.conn.compute.wait_for_delete(
                server, interval=self.poll_interval,
                wait=self.delete_timeout)
        except sdk_exc.ResourceTimeout:
            try:
                status = self.conn.compute.get_server(server.id).status
            except sdk_exc.ResourceNotFound:
                return
            if status != 'SOFT_DELETED':
                raise TimeoutError('server %s not deleted after %g s (%s)'
                                   % (server.id, self.delete_timeout,
                                      status))

    def _rollback(self, app, servers):
        """Delete the servers of a failed transition; ids left behind."""
        left = []
        for server in servers:
            sid = server.id
            try:
                self.conn.compute.delete_server(sid, ignore_missing=True)
                self._wait_gone(server)
                LOG.info('Application %s: rollback deleted %s', app.name,
                         sid)
            except Exception as exc:
                LOG.error('Application %s: rollback could not delete %s: %s',
                          app.name, sid, _one_line(exc))
                left.append(sid)
        self._notify('rolled-back', None)
        return left


def _one_line(exc):
    return ' '.join(str(exc).split()) or type(exc).__name__
