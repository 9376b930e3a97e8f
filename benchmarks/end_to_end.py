#!/usr/bin/env python
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
"""End to end on a real cloud: a normal server on a preemptible-full cloud.

Usage::

    python benchmarks/end_to_end.py --os-cloud devcloud-admin
        [--stock-cloud NAME] [--flavor m1.medium] [--image NAME]
        [--repeat 3] [--timeout 300] [--retry-mode rebuild|recreate]
        [--json PATH]

Times ``server create`` to ACTIVE of one normal server (openstacksdk,
through the public APIs only; the cloud needs admin rights to list every
server and read Placement) in three designs:

opie
    The cloud (``--os-cloud``, running opie-scheduler) is filled with
    preemptible servers (the preemptible twin of ``--flavor``, see
    ``opie-sched flavor create-preemptible``) until no more fit; the normal
    server is created and opie preempts inside the scheduling pass.
(a) room free
    The same create where the room is free: on ``--stock-cloud`` (a cloud
    running stock nova-scheduler) when given, else on the ``--os-cloud``
    cloud emptied first, i.e. opie-scheduler without preemption, NOT stock
    Nova (opie's pass is then within a few per cent of stock Nova's, see
    ``benchmarks/scheduling_latency.py``). The output names the cloud of
    every column.
(b) retry design, same cloud (aardvark-style; see below for what is
    not aardvark's)
    The cloud is filled with servers of the *normal* flavor that this
    script treats as the preemptible project's (named ``e2e-pre-*``; Nova
    counts them as normal, as a cloud without opie does), so the create
    fails with NoValidHost; the reaper (this script, through the public
    APIs) reads each host's free room from Placement and chooses victims
    with a simple greedy rule over the preemptible project's servers, in
    the spirit of aardvark's strategies (our own rule, not aardvark's code)
    and not opie's exact selection: on each host the preemptible servers
    largest first until the request fits, on the host needing the fewest;
    it deletes them, waits until
    their Placement allocations are gone, and rebuilds the same failed
    server (``--retry-mode rebuild``, as aardvark; ``recreate`` deletes it
    and creates a new one), until ACTIVE.

    Not as aardvark: the failure is seen by polling the server every 50 ms
    (aardvark listens to the ``select_destinations.error`` /
    ``instance.update`` notifications; the devcloud's Nova sends none: its
    nova.conf sets no ``[oslo_messaging_notifications] driver``), and (a)
    on a stock Nova needs a second cloud (``--stock-cloud``; ``opie-sched
    devcloud up`` always runs opie-scheduler).

Every repetition refills the cloud. Prints per design the median create to
ACTIVE and a breakdown (API answer, scheduled/failed, victims gone,
ACTIVE), the ratios opie/(a) (target <= 1.5) and (b)/opie (target >= 2),
and what dominates. ``--json PATH`` also writes the samples and the
medians that
:class:`opie_sched.simulator.preemption_latency.RetryStepCosts` reads
(``model_steps``: ``boot``, ``delete``, ``fail`` in seconds).
"""

import argparse
import json
import statistics
import sys
import time

POLL = 0.05
PREFIX = 'e2e-'


def _now():
    return time.monotonic()


class Cloud:
    """One openstacksdk connection and the helpers the designs share."""

    def __init__(self, name, flavor, image, timeout):
        import openstack
        self.name = name
        self.conn = openstack.connect(cloud=name)
        self.timeout = timeout
        self.flavor = self.conn.compute.find_flavor(flavor,
                                                    ignore_missing=False)
        self.image = self._image(image)

    def _image(self, name):
        if name:
            return self.conn.image.find_image(name, ignore_missing=False)
        for image in self.conn.image.images():
            return image
        raise SystemExit('cloud %s has no image; pass --image' % self.name)

    def twin(self):
        from opie_sched.common import flavors
        return self.conn.compute.find_flavor(
            flavors.twin_name(self.flavor.name), ignore_missing=False)

    # -- servers ---------------------------------------------------------

    def create(self, name, flavor):
        return self.conn.compute.create_server(
            name=name, flavor_id=flavor.id, image_id=self.image.id,
            networks='none')

    def ours(self):
        return [s for s in self.conn.compute.servers(all_projects=True)
                if (s.name or '').startswith(PREFIX)]

    def watch(self, server, until=('ACTIVE',), marks=None, error_ok=False):
        """Poll ``server`` until its status is in ``until`` (or ERROR,
        unless ``error_ok``); ``marks`` (dict) gets the first time each
        state was seen.

        :returns: the final server.
        :raises RuntimeError: on timeout.
        """
        marks = {} if marks is None else marks
        deadline = _now() + self.timeout
        while True:
            s = self.conn.compute.get_server(server.id)
            t = _now()
            if s.compute_host and 'scheduled' not in marks:
                marks['scheduled'] = t
            marks.setdefault('status:%s' % s.status, t)
            if s.status in until or (s.status == 'ERROR'
                                     and not error_ok):
                return s
            if t > deadline:
                raise RuntimeError('server %s still %s after %d s' % (
                    s.id, s.status, self.timeout))
            time.sleep(POLL)

    def wait_gone(self, ids):
        deadline = _now() + self.timeout
        ids = set(ids)
        while ids:
            alive = {s.id for s in self.conn.compute.servers(
                all_projects=True)}
            ids &= alive
            if not ids:
                break
            if _now() > deadline:
                raise RuntimeError('servers not deleted: %s' % sorted(ids))
            time.sleep(POLL)

    def wait_allocations_gone(self, ids):
        """Wait until Placement holds no allocation of these consumers
        (the victims released their host, as aardvark waits).
        """
        deadline = _now() + self.timeout
        ids = set(ids)
        while ids:
            ids = {i for i in ids if self._get('/allocations/%s' % i)
                   .get('allocations')}
            if not ids:
                break
            if _now() > deadline:
                raise RuntimeError('allocations not released: %s'
                                   % sorted(ids))
            time.sleep(POLL)

    def clean(self):
        ours = self.ours()
        for s in ours:
            self.conn.compute.delete_server(s.id, ignore_missing=True)
        self.wait_gone([s.id for s in ours])

    # -- placement -------------------------------------------------------

    def _get(self, path):
        return self.conn.placement.get(
            path, headers={'OpenStack-API-Version': 'placement 1.6'}
        ).json()

    def hosts(self):
        """``{provider name: (capacity, used)}`` (Resources: vCPU, MB, GB)
        from Placement: capacity of the standard classes, usage of the
        full state (standard plus opie's ``CUSTOM_PREEMPTIBLE_*``).
        """
        from opie_sched.preemption import model
        result = {}
        for rp in self._get('/resource_providers')['resource_providers']:
            inv = self._get('/resource_providers/%s/inventories'
                            % rp['uuid'])['inventories']
            use = self._get('/resource_providers/%s/usages'
                            % rp['uuid'])['usages']
            if 'VCPU' not in inv:
                continue
            cap, used = [], []
            for rc in ('VCPU', 'MEMORY_MB', 'DISK_GB'):
                i = inv.get(rc, {})
                cap.append((i.get('total', 0) - i.get('reserved', 0))
                           * i.get('allocation_ratio', 1.0))
                used.append(use.get(rc, 0)
                            + use.get('CUSTOM_PREEMPTIBLE_' + rc, 0))
            result[rp['name']] = (model.Resources(*cap),
                                  model.Resources(*used))
        return result

    def room(self, flavor, hosts):
        """How many more servers of ``flavor`` fit the full states."""
        size = (flavor.vcpus, flavor.ram, flavor.disk)
        total = 0
        for cap, used in hosts.values():
            total += int(min((c - u) // s if s else 10 ** 6
                             for c, u, s in zip(cap, used, size)))
        return max(total, 0)

    def fill(self, flavor, label, capacity_of):
        """Boot servers of ``flavor`` until a create fails: the cloud is
        full. ``capacity_of``: hosts -> how many to boot at once.
        """
        created = 0
        for _ in range(4):
            count = capacity_of(self.hosts())
            batch = [self.create('%s%s-%d' % (PREFIX, label, created + i),
                                 flavor) for i in range(count)]
            created += count
            errors = 0
            for s in batch:
                if self.watch(s).status == 'ERROR':
                    errors += 1
                    self.conn.compute.delete_server(s.id)
            probe = self.create('%sprobe' % PREFIX, flavor)
            full = self.watch(probe).status == 'ERROR'
            self.conn.compute.delete_server(probe.id)
            self.wait_gone([probe.id])
            if full:
                return created - errors
            created += 1
        raise RuntimeError('cloud %s did not fill up' % self.name)


def create_timed(cloud, name, flavor):
    """``(server, marks)``: create and watch until ACTIVE or ERROR."""
    marks = {'start': _now()}
    server = cloud.create(name, flavor)
    marks['api'] = _now()
    server = cloud.watch(server, marks=marks)
    return server, marks


def run_opie(cloud, rep):
    twin = cloud.twin()
    cloud.fill(twin, 'pre%d' % rep,
               lambda hosts: max(1, cloud.room(twin, hosts)))
    before = {s.id for s in cloud.ours() if '-pre' in s.name}
    server, marks = create_timed(cloud, '%snormal-%d' % (PREFIX, rep),
                                 cloud.flavor)
    if server.status != 'ACTIVE':
        raise RuntimeError('opie: the normal server ended %s: %s'
                           % (server.status, server.fault))
    after = {s.id for s in cloud.ours()}
    victims = before - after
    t0 = marks['start']
    sample = {'total': marks['status:ACTIVE'] - t0,
              'api': marks['api'] - t0,
              'scheduled': marks.get('scheduled', marks['status:ACTIVE'])
              - t0, 'victims': len(victims)}
    cloud.clean()
    return sample


def run_free(cloud, rep):
    cloud.clean()
    server, marks = create_timed(cloud, '%sfree-%d' % (PREFIX, rep),
                                 cloud.flavor)
    if server.status != 'ACTIVE':
        raise RuntimeError('free room: server ended %s: %s'
                           % (server.status, server.fault))
    t0 = marks['start']
    sample = {'total': marks['status:ACTIVE'] - t0,
              'api': marks['api'] - t0,
              'scheduled': marks.get('scheduled', marks['status:ACTIVE'])
              - t0}
    t1 = _now()
    cloud.conn.compute.delete_server(server.id)
    cloud.wait_gone([server.id])
    sample['delete'] = _now() - t1
    return sample


def _flavor_field(flavor, key):
    """A field of a server's embedded flavor (dict or sdk resource)."""
    try:
        value = flavor[key]
    except (KeyError, TypeError):
        value = getattr(flavor, key, None)
    return value or 0


def aardvark_victims(cloud, request):
    """An aardvark-style choice (not opie's exact selection): on each
    host, the preemptible servers (``e2e-pre*``, the preemptible
    project's) largest first until the request fits the freed room; the
    host needing the fewest victims wins (ties: least freed beyond the
    request). :returns: ``(host, [server id])``.
    """
    hosts = cloud.hosts()
    by_host = {}
    for s in cloud.ours():
        if '-pre' not in s.name or s.status != 'ACTIVE':
            continue
        size = (_flavor_field(s.flavor, 'vcpus'),
                _flavor_field(s.flavor, 'ram'),
                _flavor_field(s.flavor, 'disk')
                + _flavor_field(s.flavor, 'ephemeral'))
        by_host.setdefault(s.hypervisor_hostname, []).append((size, s.id))
    best = None
    need = (request.vcpus, request.memory_mb, request.disk_gb)
    for name, (cap, used) in hosts.items():
        free = [c - u for c, u in zip(cap, used)]
        chosen = []
        for size, sid in sorted(by_host.get(name, []), reverse=True):
            if all(f >= n for f, n in zip(free, need)):
                break
            chosen.append(sid)
            free = [f + x for f, x in zip(free, size)]
        if not all(f >= n for f, n in zip(free, need)):
            continue
        key = (len(chosen), sum(f - n for f, n in zip(free, need)))
        if best is None or key < best[0]:
            best = (key, name, chosen)
    if best is None:
        raise RuntimeError('reaper: no host can be freed')
    return best[1], best[2]


def run_retry(cloud, rep, mode='rebuild'):
    """The retry design: boot fails, the reaper frees a host, the same
    server is rebuilt (``mode`` rebuild, as aardvark) or deleted and
    created again (``recreate``).
    """
    from opie_sched.preemption import model
    f = cloud.flavor
    cloud.fill(f, 'pre%d' % rep,
               lambda hosts: max(1, cloud.room(f, hosts)))
    request = model.Resources(f.vcpus, f.ram, f.disk)
    t0 = _now()
    server = cloud.create('%snormal-%d' % (PREFIX, rep), f)
    t_api = _now()
    server = cloud.watch(server)
    t_fail = _now()
    if server.status != 'ERROR':
        raise RuntimeError('retry: the first build did not fail (%s): the '
                           'cloud was not full' % server.status)
    host, victims = aardvark_victims(cloud, request)
    t_chosen = _now()
    for v in victims:
        cloud.conn.compute.delete_server(v)
    cloud.wait_allocations_gone(victims)
    t_gone = _now()
    if mode == 'rebuild':
        marks = {}
        cloud.conn.compute.rebuild_server(server, cloud.image.id)
        # the rebuild starts from ERROR: wait for it to leave ERROR first
        cloud.watch(server, until=('REBUILD', 'ACTIVE'), marks=marks,
                    error_ok=True)
        again = cloud.watch(server, marks=marks)
        if again.status != 'ACTIVE' or not again.compute_host:
            raise RuntimeError(
                'retry: rebuilding the failed server %s ended %s on host '
                '%s (fault %s); this Nova may not rebuild a server that '
                'was never scheduled: use --retry-mode recreate'
                % (server.id, again.status, again.compute_host,
                   again.fault))
    else:
        cloud.conn.compute.delete_server(server.id)
        again, marks = create_timed(
            cloud, '%snormal-%d-again' % (PREFIX, rep), f)
        if again.status != 'ACTIVE':
            raise RuntimeError('retry: the re-created server ended %s: %s'
                               % (again.status, again.fault))
    t_active = marks['status:ACTIVE']
    sample = {'total': t_active - t0, 'api': t_api - t0,
              'failed': t_fail - t0, 'reaper': t_chosen - t_fail,
              'victims_gone': t_gone - t_chosen,
              'recreate': t_active - t_gone, 'victims': len(victims),
              'host': host}
    cloud.clean()
    return sample


def med(samples, key):
    values = [s[key] for s in samples if key in s]
    return statistics.median(values) if values else float('nan')


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--os-cloud', required=True,
                   help='cloud (clouds.yaml) running opie-scheduler, admin')
    p.add_argument('--stock-cloud',
                   help='cloud running stock Nova for (a) (default: '
                        '--os-cloud with the room free)')
    p.add_argument('--flavor', default='m1.medium',
                   help='normal flavor; its preemptible twin fills the '
                        'cloud (default: %(default)s)')
    p.add_argument('--image', help='image name or id (default: the first)')
    p.add_argument('--repeat', type=int, default=3)
    p.add_argument('--timeout', type=float, default=300.0,
                   help='seconds to wait for any one server')
    p.add_argument('--retry-mode', choices=('rebuild', 'recreate'),
                   default='rebuild',
                   help='how the retry design retries the failed server: '
                        'rebuild it (as aardvark) or delete it and create '
                        'a new one (default: %(default)s)')
    p.add_argument('--json', metavar='PATH')
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error('--repeat must be >= 1')
    opie = Cloud(args.os_cloud, args.flavor, args.image, args.timeout)
    stock = (Cloud(args.stock_cloud, args.flavor, args.image, args.timeout)
             if args.stock_cloud else opie)
    free_on = ('%s (stock nova-scheduler, --stock-cloud)' % stock.name
               if args.stock_cloud else
               '%s emptied first (opie-scheduler, NOT stock Nova: no '
               '--stock-cloud given)' % opie.name)
    print('end to end: flavor %s (%d vCPU / %d MB / %d GB), image %s, %d '
          'repetitions' % (opie.flavor.name, opie.flavor.vcpus,
                           opie.flavor.ram, opie.flavor.disk,
                           opie.image.name, args.repeat))
    print('  (a) room free ran on: %s' % free_on)
    print('  opie ran on: %s (opie-scheduler)' % opie.name)
    print('  (b) retry design ran on: %s (its fill is normal servers, so '
          'opie never preempts there)' % opie.name)
    samples = {'opie': [], 'free': [], 'retry': []}
    opie.clean()
    try:
        for rep in range(args.repeat):
            for design, func, cloud in (('free', run_free, stock),
                                        ('opie', run_opie, opie),
                                        ('retry', run_retry, opie)):
                s = (func(cloud, rep, args.retry_mode) if design == 'retry'
                     else func(cloud, rep))
                samples[design].append(s)
                print('  rep %d %-5s %.2f s  %s' % (
                    rep + 1, design, s['total'], ', '.join(
                        '%s %s' % (k, ('%.2f' % v) if isinstance(
                            v, float) else v)
                        for k, v in sorted(s.items()) if k != 'total')),
                      file=sys.stderr)
                sys.stderr.flush()
    finally:
        opie.clean()
        if stock is not opie:
            stock.clean()
    free, op, retry = (med(samples[k], 'total') for k in
                       ('free', 'opie', 'retry'))
    print()
    print('%-34s %8s  %s' % ('median create -> ACTIVE', 's', 'cloud'))
    print('%-34s %8.2f  %s' % ('(a) room free', free, free_on))
    print('%-34s %8.2f  %s' % ('opie, preemptible-full', op, opie.name))
    print('%-34s %8.2f  %s' % ('(b) retry (%s)' % args.retry_mode, retry,
                               opie.name))
    print()
    print('ratio opie/(a): %.2f (target <= 1.5)' % (op / free))
    print('ratio (b)/opie: %.2f (target >= 2)' % (retry / op))
    print()
    print('breakdown (medians, s):')
    print('  opie : API %.2f, scheduled (victims chosen, deleted, host set)'
          ' %.2f, ACTIVE %.2f' % (med(samples['opie'], 'api'),
                                  med(samples['opie'], 'scheduled'), op))
    parts = [('API answer', med(samples['retry'], 'api')),
             ('build failed (NoValidHost)',
              med(samples['retry'], 'failed')),
             ('reaper choice', med(samples['retry'], 'reaper')),
             ('victims gone', med(samples['retry'], 'victims_gone')),
             ('%s to ACTIVE' % args.retry_mode,
              med(samples['retry'], 'recreate'))]
    print('  retry: ' + ', '.join('%s %.2f' % kv for kv in parts))
    steps = [kv for kv in parts[1:]]
    top = max(steps, key=lambda kv: kv[1])
    print('  retry is dominated by: %s (%.0f%% of its total)' % (
        top[0], 100.0 * top[1] / retry))
    print('  opie: scheduling incl. preemption %.0f%% of its total, boot '
          'after it %.0f%%' % (
              100.0 * med(samples['opie'], 'scheduled') / op,
              100.0 * (op - med(samples['opie'], 'scheduled')) / op))
    if args.json:
        doc = {'cloud': opie.name, 'free_room_cloud': free_on,
               'retry_mode': args.retry_mode,
               'stock_cloud': args.stock_cloud,
               'flavor': opie.flavor.name, 'samples': samples,
               'medians': {'free': free, 'opie': op, 'retry': retry},
               'ratios': {'opie_vs_free': op / free,
                          'retry_vs_opie': retry / op},
               # what RetryStepCosts reads (seconds)
               'model_steps': {
                   'boot': free,
                   'delete': med(samples['free'], 'delete'),
                   'fail': med(samples['retry'], 'failed'),
                   'reaper': med(samples['retry'], 'reaper')}}
        with open(args.json, 'w') as f:
            json.dump(doc, f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
