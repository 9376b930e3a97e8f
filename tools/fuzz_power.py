#!/usr/bin/env python3
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
"""The invariant fuzzer's power (issue 30): each mutation reverts one
guarantee of ``opie_sched`` (a fix of issue 19's holes 1-6, the host lock,
the post-claim check, exact victim selection...) in a copy of the tree;
the fuzzer's long mode runs on that copy, and a table tells, per
mutation, whether an invariant failed and after how many examples.

Each mutation is a textual replacement (one exact occurrence) in one
source file, so it is plain what was reverted. The same seed
(derandomized) runs for every mutation and for a baseline without any,
with the same rules: a mutation counts as found only when its run fails
and the baseline's did not fail at that example or before.

Usage (from the repository root, in the py3 environment)::

    python tools/fuzz_power.py [--examples N] [--steps N] [--only NAME,...]
        [--exclude RULE,...] [--rules RULE,...] [--no-swarm]
        [--timeout SECONDS] [--list]
"""

import argparse
import ast
from concurrent import futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEST = 'tests.functional.test_invariant_fuzz.InvariantFuzzTest.test_long'
#: The rules every run leaves out unless a mutation needs them. Empty
#: since issue 30's holes 2-4 were fixed (it left out ``fault_shelve``,
#: ``hang_compute``, ``lose_compute_deletes`` and ``clock_jump``, which
#: reached them on main).
DEFAULT_EXCLUDED = ()


def mutation(name, path, old, new, what, needs=(), every=False):
    """One reverted guarantee: ``old`` replaced by ``new`` in ``path``
    (exactly once; every occurrence, at least one, when ``every``).
    """
    return {'name': name, 'path': path, 'old': old, 'new': new,
            'what': what, 'needs': tuple(needs), 'every': every}


MUTATIONS = [
    mutation(
        'i19.1-no-recheck', 'opie_sched/scheduler/actions.py',
        '    if not ownership.may_be_victim(inst):\n',
        '    if False:\n',
        'issue 19 #1: a destructive step does not re-check that the '
        'victim is still preemptible'),
    mutation(
        'i19.2-moves-preempt', 'opie_sched/scheduler/manager.py',
        '    if operation in operations.MOVES:\n',
        '    if False:\n',
        'issue 19 #2: live migrations and evacuations preempt'),
    mutation(
        'i19.3-capacity-formula', 'opie_sched/scheduler/host_capacity.py',
        '    used = model.Resources(node.vcpus_used, node.memory_mb_used,\n'
        '                           node.local_gb_used) - reserved\n',
        '    capacity = model.Resources(\n'
        '        node.vcpus * node.cpu_allocation_ratio,\n'
        '        node.memory_mb * node.ram_allocation_ratio,\n'
        '        node.local_gb * node.disk_allocation_ratio)\n'
        '    used = model.Resources(node.vcpus_used, node.memory_mb_used,\n'
        '                           node.local_gb_used)\n',
        'issue 19 #3: the reconciler screen uses total x ratio with '
        'reserved counted as used'),
    mutation(
        'i19.4-deleting-forever', 'opie_sched/scheduler/actions.py',
        "    if deleting and step != 'retry':\n",
        '    if deleting:\n',
        'issue 19 #4: a victim stuck in deleting is never deleted again',
        needs=('lose_compute_deletes',)),
    mutation(
        'i19.5-soft-deleted-no-candidate',
        'opie_sched/scheduler/cell_reads.py',
        '    alive = sa.and_(inst.c.uuid.in_(uuids), inst.c.deleted == 0)\n',
        '    alive = sa.and_(inst.c.uuid.in_(uuids), inst.c.deleted == 0,\n'
        "                    inst.c.vm_state != 'soft-delete')\n",
        'issue 19 #5: a soft-deleted server is never a candidate'),
    mutation(
        'i19.5-resize-source-no-candidate',
        'opie_sched/scheduler/ownership.py',
        '    missing = consumers - set(rows)\n    if missing:\n',
        '    missing = consumers - set(rows)\n    if False:\n',
        'issue 19 #5: the source allocation of an unconfirmed resize is '
        'never a candidate'),
    mutation(
        'i19.6-lifetime-launched-at', 'opie_sched/scheduler/reconciler.py',
        '            age = _age(ownership.lifetime_start(cctxt, inst), now)\n',
        '            age = _age(inst.launched_at, now)\n',
        'issue 19 #6: the age is counted from launched_at (reset by a '
        'rescue, resize, unshelve)', needs=('clock_jump',)),
    mutation(
        'no-host-lock', 'opie_sched/scheduler/manager.py',
        '        with locks.coordinator(CONF).lock(locks.host_lock_name('
        'rp_uuid),\n'
        '                                          locks.HOST_LOCK_TIMEOUT):\n'
        '            now = timeutils.utcnow(with_timezone=True)\n',
        '        with contextlib.nullcontext():\n'
        '            now = timeutils.utcnow(with_timezone=True)\n',
        'the preemption decisions (a request\'s, an alternate\'s claim) '
        'without the host lock', every=True),
    mutation(
        'no-post-claim-check', 'opie_sched/scheduler/manager.py',
        '        rp_uuid = host_state.uuid\n'
        '        client = self.placement_client\n'
        '        capacity = self._capacity(view, host_state)\n',
        '        return\n'
        '        rp_uuid = host_state.uuid\n'
        '        client = self.placement_client\n'
        '        capacity = self._capacity(view, host_state)\n',
        'a claim that may not preempt is not checked after it lands'),
    mutation(
        'costs-ignored', 'opie_sched/preemption/planner.py',
        '    candidates = instance_costs(host, policy, now)\n'
        '    selection = victims_mod.select_victims(candidates, deficit)\n',
        '    candidates = [(i, 0.0) for i, _ in\n'
        '                  instance_costs(host, policy, now)]\n'
        '    selection = victims_mod.select_victims(candidates, deficit)\n',
        'victims chosen without their costs (any feasible set)'),
    mutation(
        'leaving-candidates', 'opie_sched/preemption/model.py',
        '                if i.preemptible and not i.leaving and not '
        'i.pinned]\n',
        '                if i.preemptible and not i.pinned]\n',
        'instances already leaving are candidates again'),
    mutation(
        'no-leaving-deadline', 'opie_sched/preemption/victim_state.py',
        '        return (self.state == TERMINATING\n'
        '                and (self.next_attempt is None or now >= '
        'self.next_attempt))\n',
        '        return False\n',
        'a terminating victim is never retried: leaving with no deadline'),
    mutation(
        'reconciler-victims-skip-soft-deleted',
        'opie_sched/scheduler/reconciler.py',
        "            cctxt, {'deleted': False, 'soft_deleted': True,\n",
        "            cctxt, {'deleted': False, 'soft_deleted': False,\n",
        'the reconciler\'s victim scan drops soft-deleted victims (one '
        'whose delete failed stays leaving; issue 30\'s test gap)',
        needs=('soft_delete', 'fault_delete')),
    mutation(
        'reconciler-no-repair', 'opie_sched/scheduler/reconciler.py',
        '            if (used - capacity).fits_in(model.ZERO):\n'
        '                continue\n',
        '            if True:\n'
        '                continue\n',
        'the reconciler never repairs an overcommitted host'),
    # issue 30's fixes (the ownership model)
    mutation(
        'i30.1-pinned-candidates', 'opie_sched/preemption/model.py',
        '                if i.preemptible and not i.leaving and not '
        'i.pinned]\n',
        '                if i.preemptible and not i.leaving]\n',
        'issue 30 #1/#7: a server its owner is moving (resize, migration, '
        'VERIFY_RESIZE) is a candidate again'),
    mutation(
        'i30.2-lifetime-from-creation', 'opie_sched/scheduler/reconciler.py',
        '            age = _age(ownership.lifetime_start(cctxt, inst), now)\n',
        '            age = _age(inst.created_at, now)\n',
        'issue 30 #2: the lifetime counts from the creation, not from the '
        'resize that made the server preemptible'),
    mutation(
        'i30.2-lifetime-while-moving', 'opie_sched/scheduler/reconciler.py',
        '                    or ownership.instance_state(inst, now=now)\n'
        '                    != ownership.RUNNING):\n',
        '                    ):\n',
        'issue 30 #2: the lifetime ends servers in VERIFY_RESIZE or moving'),
    mutation(
        'i30.3-shelve-no-fallback', 'opie_sched/preemption/behaviours.py',
        '        if vm_state in self.SHELVABLE:\n'
        '            return SHELVE_VERB\n'
        '        return REFUSED\n',
        '        return SHELVE_VERB\n',
        'issue 30 #3: a victim Nova refuses to shelve is shelved again '
        '(no fallback)'),
    mutation(
        'i30.4-deleting-forever', 'opie_sched/preemption/ownership.py',
        '        return until if now < until else None\n'
        "    if record is not None and record.state == 'reserved':\n",
        '        return FOREVER\n'
        "    if record is not None and record.state == 'reserved':\n",
        'issue 30 #4: a server in deleting that is no opie victim counts as '
        'leaving with no deadline'),
    mutation(
        'i30.6-no-alternate-check', 'opie_sched/scheduler/manager.py',
        '        cell_uuid = selection.cell_uuid\n'
        '        capacity = reservations.provider_capacity(client, ctx, '
        'rp_uuid)\n',
        '        return\n'
        '        cell_uuid = selection.cell_uuid\n'
        '        capacity = reservations.provider_capacity(client, ctx, '
        'rp_uuid)\n',
        'issue 30 #6: a reschedule\'s claim of an alternate is not checked'),
    mutation(
        'i30.9-bfv-disk', 'opie_sched/scheduler/ownership.py',
        '    return flavors.disk_gb(0 if boot_from_volume else root_gb,\n',
        '    return flavors.disk_gb(root_gb,\n',
        'issue 30 #9: a boot-from-volume server counts its flavor\'s root '
        'disk'),
    # the spot market's enforcement (the market_round rule)
    mutation(
        'market-no-preemptible-recheck',
        'opie_sched/services/market/enforcement.py',
        'not info.preemptible', 'False',
        'the market\'s enforcement never re-reads whether a noticed server '
        'is still preemptible (a resize to a normal flavor keeps its '
        'notice)', needs=('market_round',), every=True),
    mutation(
        'market-ignores-moves', 'opie_sched/services/market/enforcement.py',
        '        if info.busy:\n'
        "            LOG.info('server %s is busy (%s, task %s): its "
        "preemption '\n",
        '        if False:\n'
        "            LOG.info('server %s is busy (%s, task %s): its "
        "preemption '\n",
        'the market\'s enforcement acts on a server its owner is moving '
        '(resize, migration in progress)', needs=('market_round',)),
    mutation(
        'market-marker-not-classes', 'opie_sched/services/market/cloud.py',
        '    preemptible = ownership.requests_preemptible(specs)\n',
        '    preemptible = ownership.marked(specs)\n',
        'the market decides "preemptible" by the flavor marker instead of '
        'the resource classes', needs=('market_round',)),
]


def machine_rules():
    """The machine's ``RULES``, read from its source (importing it would
    import nova, and its monkey patching, into this process).
    """
    path = os.path.join(ROOT, 'tests', 'functional', 'fuzz', 'machine.py')
    with open(path) as f:
        tree = ast.parse(f.read())
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], 'id', None) == 'RULES'):
            return ast.literal_eval(node.value)
    raise SystemExit('no RULES in %s' % path)


def copy_tree(dest):
    ignore = shutil.ignore_patterns('.git', '.tox', '.stestr', '*.pyc',
                                    '__pycache__', '.hypothesis', 'build',
                                    'doc', 'releasenotes', 'demo-output',
                                    '*.egg-info', '.tempest-cloud')
    shutil.copytree(ROOT, dest, ignore=ignore)


def apply(tree, mut):
    path = os.path.join(tree, mut['path'])
    with open(path) as f:
        text = f.read()
    count = text.count(mut['old'])
    if count != 1 and not (mut.get('every') and count):
        raise SystemExit('mutation %s: %d occurrences of its text in %s '
                         '(the source changed; update the mutation)'
                         % (mut['name'], count, mut['path']))
    text = text.replace(mut['old'], mut['new'])
    if 'contextlib.nullcontext' in mut['new'] and \
            'import contextlib' not in text:
        text = 'import contextlib\n' + text
    with open(path, 'w') as f:
        f.write(text)


def run(tree, examples, steps, excluded, timeout, swarm=True):
    """Run the long mode in ``tree``; ``(failed, stats, problem, secs)``."""
    stats_path = os.path.join(tree, 'fuzz-stats.json')
    env = dict(os.environ, PYTHONPATH=tree, OPIE_FUZZ_EXAMPLES=str(examples),
               OPIE_FUZZ_STEPS=str(steps), OPIE_FUZZ_SHRINK='0',
               OPIE_FUZZ_STATS=stats_path,
               OPIE_FUZZ_EXCLUDE=','.join(excluded),
               OPIE_FUZZ_SWARM='1' if swarm else '0')
    env.pop('OPIE_FUZZ_SEED', None)
    start = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, '-m', 'testtools.run', TEST], cwd=tree, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            timeout=timeout)
        out, code = proc.stdout.decode('utf-8', 'replace'), proc.returncode
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b'').decode('utf-8', 'replace')
        code = None
    secs = time.monotonic() - start
    stats = {}
    if os.path.exists(stats_path):
        with open(stats_path) as f:
            stats = json.load(f)
    problem = ''
    for line in out.splitlines():
        if 'AssertionError: ' in line:
            problem = line.split('AssertionError: ', 1)[1].strip()[:110]
            break
    if not problem:
        for line in out.splitlines():
            if line.startswith(('Traceback', '20')):
                continue
            if 'Error: ' in line or 'Exception: ' in line:
                problem = line.strip()[:110]
                break
    failed = code not in (0,) if code is not None else None
    if failed and ('FlakyStrategyDefinition' in out
                   or 'Flaky' in problem):
        if stats.get('first failure'):
            # an invariant failed; hypothesis's replay of that example
            # went otherwise (timing) and it raised Flaky instead
            failed = 'unreplayed'
            problem = stats['first failure'].splitlines()[0][:110]
            stats['examples'] = stats.get('first failure example',
                                          stats.get('examples'))
        else:
            # hypothesis's generation, not an invariant: no finding
            failed, problem = 'flaky', 'hypothesis FlakyStrategyDefinition'
    return failed, stats, problem, secs, out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--examples', type=int, default=int(
        os.environ.get('OPIE_FUZZ_EXAMPLES', '20')))
    parser.add_argument('--steps', type=int, default=12)
    parser.add_argument('--only', default='')
    parser.add_argument('--timeout', type=float, default=3600)
    parser.add_argument('--jobs', type=int, default=1,
                        help='runs at once (each one process, one core)')
    parser.add_argument('--list', action='store_true')
    parser.add_argument('--keep-logs', default='')
    parser.add_argument('--no-baseline', action='store_true',
                        help='no baseline run (another run made it)')
    parser.add_argument('--exclude', default='',
                        help='rules every run (the baseline too) leaves '
                             'out, comma-separated: a run focused on the '
                             'rules a guarantee needs')
    parser.add_argument('--rules', default='',
                        help='the only rules allowed (with those a '
                             'mutation needs), comma-separated: every '
                             'other rule of the machine is excluded')
    parser.add_argument('--no-swarm', action='store_true',
                        help='every allowed rule in every example (no '
                             'drawn subsets): for focused runs')
    args = parser.parse_args(argv)
    default_excluded = DEFAULT_EXCLUDED + tuple(
        r for r in args.exclude.split(',') if r)
    if args.rules:
        rules = machine_rules()
        allowed = set(args.rules.split(','))
        unknown = allowed - set(rules)
        if unknown:
            raise SystemExit('unknown rules: %s' % ', '.join(sorted(unknown)))
        default_excluded += tuple(r for r in rules
                                  if r not in allowed
                                  and r not in default_excluded)
    muts = MUTATIONS
    if args.only:
        names = args.only.split(',')
        muts = [m for m in MUTATIONS if m['name'] in names]
    if args.list:
        for m in muts:
            print('%-34s %s' % (m['name'], m['what']))
        return 0
    work = tempfile.mkdtemp(prefix='fuzz-power-')
    # the trees are copied before any run starts: edits made to the
    # checkout while the runs go on do not leak into them
    jobs = []
    excluded_sets = []
    for mut in muts:
        excluded = tuple(r for r in default_excluded
                         if r not in mut['needs'])
        if excluded not in excluded_sets:
            excluded_sets.append(excluded)
            if not args.no_baseline:
                tree = os.path.join(work, 'baseline-%d' % (
                    len(excluded_sets) - 1))
                copy_tree(tree)
                jobs.append((None, excluded, tree))
        tree = os.path.join(work, mut['name'])
        copy_tree(tree)
        apply(tree, mut)
        jobs.append((mut, excluded, tree))
    results = {}

    def one(job):
        mut, excluded, tree = job
        res = run(tree, args.examples, args.steps, excluded, args.timeout,
                  swarm=not args.no_swarm)
        name = mut['name'] if mut else 'baseline-%d' % (
            excluded_sets.index(excluded))
        if args.keep_logs:
            _keep(args.keep_logs, name, res[4])
        shutil.rmtree(tree, ignore_errors=True)
        failed, stats, problem, secs = res[:4]
        print('%s (excluded %s): %s after %s examples in %.0f s%s'
              % (name, ','.join(excluded) or '-',
                 'FAILED' if failed is True else 'held' if failed is False
                 else failed if failed
                 else 'timeout', stats.get('examples', '?'), secs,
                 ': ' + problem if failed else ''), flush=True)
        return job, res

    started = time.monotonic()
    try:
        with futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
            for job, res in pool.map(one, jobs):
                results[(job[0] and job[0]['name'], job[1])] = res
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows = []
    for mut in muts:
        excluded = tuple(r for r in default_excluded
                         if r not in mut['needs'])
        failed, stats, problem, secs = results[(mut['name'], excluded)][:4]
        base = results.get((None, excluded), (False, {}, '', 0, ''))
        n = stats.get('examples', '?')
        attributable = failed in (True, 'unreplayed') and not (
            base[0] and base[1].get('examples', 10 ** 9) <= n)
        rows.append((mut['name'], (
            'yes (not replayable)' if failed == 'unreplayed' else 'yes')
            if attributable else (
            'no' if failed is False else
            'no (flaky generation)' if failed == 'flaky' else
            'timeout' if failed is None else 'baseline'), n,
            round(secs), problem if failed else ''))
    print()
    print('%d examples of %d steps per run, %d runs at once, %.0f s in all'
          % (args.examples, args.steps, args.jobs,
             time.monotonic() - started))
    for excluded in excluded_sets:
        base = results.get((None, excluded))
        if base is not None:
            print('baseline (excluded %s): %s, %s examples, %s invariant '
                  'checks, %s decisions (%s preempting)' % (
                      ','.join(excluded) or '-',
                      'FAILED: ' + base[2] if base[0] else 'held',
                      base[1].get('examples', '?'),
                      base[1].get('invariant checks', '?'),
                      base[1].get('decisions', '?'),
                      base[1].get('decisions preempting', '?')))
            print('rules run: ' + ', '.join(
                '%s %d' % (k[5:], v) for k, v in sorted(base[1].items())
                if k.startswith('rule ')))
    print()
    print('| mutation | found | examples until found (or run) | seconds | '
          'first problem |')
    print('|---|---|---|---|---|')
    for row in rows:
        print('| %s | %s | %s | %s | %s |' % row)
    return 0


def _keep(directory, name, out):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, name + '.log'), 'w') as f:
        f.write(out)


if __name__ == '__main__':
    sys.exit(main())
