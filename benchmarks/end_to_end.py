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
        [--repeat 3] [--timeout 300] [--json PATH]

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
(b) retry design, same cloud (a retry loop in the spirit of aardvark's
    reaper; not yet aardvark's design, see below)
    The cloud is filled with servers of the *normal* flavor that this
    script treats as preemptible (named ``e2e-pre-*``; Nova counts them as
    normal, as a cloud without opie does), so the create fails with
    NoValidHost; the reaper (this script, through the API) reads each
    host's free room from Placement, chooses the cheapest victims with
    opie's own exact selection (same cost module: billing period of 3600 s
    on the servers' launch times) on the host where they cost least,
    deletes them and waits until they are gone; the failed server is
    deleted (not waited for) and the server is created again, until
    ACTIVE.

    Where it differs from aardvark (CERN's reaper), each difference making
    this baseline faster or slower than aardvark would be: aardvark reacts
    to the ``select_destinations.error`` / ``instance.update``
    notifications (here: the API is polled every 50 ms, which detects the
    failure about as fast); it picks victims with its own strategies over
    the preemptible projects (here: opie's exact selection, at least as
    good a choice); it waits for the victims' Placement allocations to go
    (here: for the servers to vanish from a listing, a little later); and
    it rebuilds the same pending instance (here: delete and POST again, an
    extra build request and quota check). Doing those needs nova
    notifications enabled on the devcloud and a stock-scheduler devcloud
    beside it (not available in ``opie-sched devcloud up``).

Every repetition refills the cloud. Prints per design the median create to
ACTIVE and a breakdown (API answer, scheduled/failed, victims gone,
ACTIVE), the ratios opie/(a) (target <= 1.5) and (b)/opie (target >= 2),
and what dominates. ``--json PATH`` also writes the samples and the
medians that
:class:`opie_sched.simulator.preemption_latency.RetryStepCosts` reads
(``model_steps``: ``boot``, ``delete``, ``fail`` in seconds).
"""

import argparse
import datetime
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

    def watch(self, server, until=('ACTIVE',), marks=None):
        """Poll ``server`` until its status is in ``until`` (or ERROR);
        ``marks`` (dict) gets the first time each state was seen.

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
            if s.status in until or s.status == 'ERROR':
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


def reaper_victims(cloud, request):
    """The reaper: the cheapest victims among ``e2e-pre*`` servers, on
    the host where they cost least (opie's exact selection, billing-period
    cost). :returns: ``(host, [server id])``.
    """
    from opie_sched.preemption import costs
    from opie_sched.preemption import model
    from opie_sched.preemption import planner
    policy = costs.load_policy('billing_period', period=3600)
    now = datetime.datetime.now(datetime.timezone.utc)
    hosts = cloud.hosts()
    by_host = {}
    for s in cloud.ours():
        if '-pre' not in s.name or s.status != 'ACTIVE':
            continue
        launched = s.launched_at
        if isinstance(launched, str):
            launched = datetime.datetime.fromisoformat(
                launched.replace('Z', '+00:00'))
        if launched is not None and launched.tzinfo is None:
            launched = launched.replace(tzinfo=datetime.timezone.utc)
        size = [_flavor_field(s.flavor, k)
                for k in ('vcpus', 'ram', 'disk', 'ephemeral')]
        by_host.setdefault(s.hypervisor_hostname, []).append(
            model.InstanceInfo(s.id, model.Resources(
                size[0], size[1], size[2] + size[3]),
                True, launched, s.name))
    views = [model.HostView(name, cap, used, by_host.get(name, []))
             for name, (cap, used) in hosts.items()]
    plans = planner.rank_hosts(views, request, policy, now)
    if not plans or not plans[0].feasible:
        raise RuntimeError('reaper: no host can be freed')
    return plans[0].host, [i.uuid for i, _ in plans[0].victims]


def run_retry(cloud, rep):
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
    host, victims = reaper_victims(cloud, request)
    t_chosen = _now()
    for v in victims:
        cloud.conn.compute.delete_server(v)
    cloud.conn.compute.delete_server(server.id)
    cloud.wait_gone(victims)
    t_gone = _now()
    again, marks = create_timed(cloud, '%snormal-%d-again' % (PREFIX, rep),
                                f)
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
                s = func(cloud, rep)
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
    print('%-34s %8.2f  %s' % ('(b) retry (delete + re-POST)', retry,
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
             ('re-create to ACTIVE', med(samples['retry'], 'recreate'))]
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
