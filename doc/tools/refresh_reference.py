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

"""Refresh the captured parts of the documentation.

The CLI reference (``doc/source/cli/opie-sched.rst``,
``openstack-spot.rst`` and the usage texts of ``services.rst``) and the
simulator's scenario tables (``doc/source/simulator/index.rst``, whose
introduction, kept in :data:`SIMULATOR_INTRO`, links the hand-written
``simulator/core.rst``) are not generated at build time: rendering them
would need nova installed in the docs environment. This script runs the
commands and rewrites those pages, each stamped with the date and the
command it ran, so that nothing on them pretends to be live::

    .tox/py3/bin/python doc/tools/refresh_reference.py \\
        [--bin-dir .tox/py3/bin] [--only cli|scenarios] [--timeout 600]
        [--reduced NAME,...] [--results DIR] [--scenario NAME,...]
    .tox/py3/bin/python doc/tools/refresh_reference.py --tally \\
        [--results DIR]

Commands are run from ``--bin-dir`` (default: the directory of this
Python). A command that fails leaves a line saying so on the page.
Scenarios run in full unless named in ``--reduced`` (or in
:data:`REDUCED_REASONS`, which also says why); ``--results DIR`` takes a
scenario's output from ``DIR/NAME.json`` (``opie-sched simulate
--scenario NAME -f json``, e.g. a long run made in the background) when
that file exists, and the page says which run it is. ``--scenario
NAME,...`` refreshes only the named scenarios' sections and keeps every
other section of the page as it is (e.g. after one long run).

The page's introduction carries the tally of the claims judged over
seeds, by scenario, read from the scenarios' sections (their
``verdicts.tally_text`` lines) each time the page is written; ``--tally``
prints that table and runs nothing.
"""

import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
SOURCE = os.path.join(ROOT, 'doc', 'source')

SERVICES = ['opie-scheduler', 'opie-reconciler', 'opie-market',
            'opie-autoscaler', 'opie-repacker']
SPOT = ['price list', 'price show', 'price history', 'bid set',
        'bid show', 'bid unset', 'account show', 'account credit',
        'ledger list', 'notice list', 'share list']

#: (name, what it runs, the paper's table or figure, or None)
SCENARIOS = [
    ('nasa-backfill',
     'The NASA Ames iPSC/860 trace (Parallel Workloads Archive, SWF) '
     'replayed with and without preemptible backfilling: the utilisation a '
     'provider gains by filling idle capacity with preemptible servers '
     'that normal jobs preempt (the motivation of [LopezGarcia2019]_). '
     'Needs the trace ``NASA-iPSC-1993-3.1-cln.swf.gz`` of the Parallel '
     'Workloads Archive in ``--traces-dir`` (default: ``../shared/traces`` '
     'next to the repository); no paper table to compare with.', None),
    ('diehard-table2',
     'Die-Hard vs Proportional vs HRF on the thesis topology, '
     'S_min = 0.9999, T = 80 h, K = 500, 700, 1000, over the thesis\' 10 '
     'runs; §5.2\'s claims judged over the seeds, each once (claims '
     'table: paper, ours with its 95 % interval, effect size, verdict); '
     'sensitivity to the power wiring (calibrated, four single PDUs, four '
     'redundant pairs) and to the literal reading of Alg. 1\'s trim.',
     '[PaperVI]_ Table 2'),
    ('diehard-tables34',
     'Die-Hard, Proportional and HRF at S_min = 0.999, K = 500, 80 h and '
     '168 h under three capacity models (one task per host, the thesis\' '
     'background load, a domain holding the whole job); both readings of '
     'Alg. 1\'s trim; §5.2\'s claims on Tables 3 and 4 judged over the '
     'thesis\' 10 runs (topologies of seeds 42-51), each once, on the '
     'background model, and their sensitivity to the capacity model and '
     'the trim reading, the thesis\' text beside.',
     '[PaperVI]_ Tables 3 and 4'),
    ('repacking-tables',
     'S_base, S_delta, S_Full and the repacked variants on the thesis\' four '
     'series (Increase1/2, Seasonal1/2: 168, 215, 182, 338 h), '
     'applications A and B, cheap (4 min) and expensive '
     '(20 min) reconfigurations, d = 1000 min, K = 1 %.',
     '[PaperV]_ Tables 3 and 6'),
    ('repacking-tables45',
     'S_delta_Repacked with a short and a long stability interval d, cheap '
     'and expensive reconfigurations, and the realised stability interval '
     'of each repack.', '[PaperV]_ Tables 4 and 5'),
    ('themis-value',
     'Themis\' proportional-share market (the SLO controllers, '
     'work-conserving shares) vs FCFS, EDF and EDF* on the first HPC2N '
     'jobs, value per task and per job, every factor judged; the '
     'market\'s suspend/resume operations under every reading of the '
     'papers\' counts (VMs or jobs, per period or most in one); Merkat '
     'Alg. 1 vs FCFS + backfilling over a curve of loads; Fig. 5(b)\'s '
     'six claims judged over 10 seeds, each once (at high load over the '
     'factors 0.1-0.3 together, at the lightest load), and their '
     'sensitivity to the pooling of the 240 CPUs (per-host markets, 120 x '
     '2 and 240 x 1 CPUs), the budget rule (B = 60 / deadline factor or '
     'B_base / deadline), the value reading and the EDF baseline.',
     '[Themis2012]_ Fig. 5, [ThemisSLO2013]_ Figs. 2 and 3, [Merkat2013]_ '
     '§5.4.3'),
    ('rpm-vs-ffd',
     'RPM vs FFD-sum with the local discovery of Alg. 1 on Table 4\'s '
     'concurrent load, 10 seeds (42-51); §6.1\'s claims about FFD-sum vs '
     'RPM (Table 4\'s text, and Table 5 on RPM) judged over the seeds, '
     'each once; their sensitivity to FFD-sum\'s overload victim order, '
     'the reading of the thesis\' load (all requests\' sum), the '
     'discovery (every host a candidate) and MaxTTL (1, 6), with the '
     'thesis\' text beside.', '[PaperIV]_ §6.1, Tables 4 and 5'),
    ('preemption-latency',
     'Scheduling latency of opie vs the unmodified scheduler vs the retry '
     'design.', '[LopezGarcia2019]_ Fig. 2'),
    ('p2p-consolidation',
     'Paper II\'s six allocation policies on a scale-free overlay, with and '
     'without re-consolidation; profit over a range of power costs.',
     '[PaperII]_ Fig. 2 and Table 2'),
    ('gossip-redistribution',
     'Random, Incremental, Merge and Merge+Imb gossip consolidation; '
     'the paper\'s claims judged over its 10 runs (seeds 42-51), each '
     'once; their sensitivity to the new-VM placement rule, the Merge '
     'direction and Alg. 2\'s redistribution trigger.',
     '[PaperIII]_ Figs. 2-5'),
    ('merkat-fig6',
     'Merkat Alg. 1 scaling an SLO-driven VM\'s bid against four '
     'best-effort VMs on one 4-core node, deadlines 200, 150 and 100 min.',
     '[Merkat2013]_ §5.4.1 Fig. 6'),
    ('themis-fig6',
     'An elastic master-worker application scaled by Horizontal-Deadline: '
     '1075 tasks, a burst of 1500 more after 85 min, deadline 643.25 min.',
     '[Themis2012]_ Fig. 6'),
    ('repacking-single-type',
     'S_base repacked to the cheapest set of one instance type instead of '
     'the optimal set, beside S_base and the repack-to-optimal '
     'strategies on the Table 3 setting; the thesis\' claims judged on '
     'every row.', '[PaperV]_ §6.2 (last paragraph)'),
    ('rpm-weights',
     'RPM with one factor of eq. 3 weighted 0.0 and 0.8 (the other four '
     'sharing the rest), Table 4\'s concurrent load; Tables 6-10 beside '
     'our means, and the claims of §6.2-6.3 about each factor judged '
     'over 10 seeds (the thesis\' 10 runs; ``--seed-count N``).',
     '[PaperIV]_ Tables 6-10 and Fig. 4'),
    ('rpm-fig3',
     'FFD-sum vs RPM over the simulated day (utilisation of the active '
     'hosts, migrations, service and batch data per window) on both load '
     'readings; the text\'s findings judged on every run (the thesis\' '
     '10 runs by default, ``--seed-count N``).',
     '[PaperIV]_ Fig. 3'),
    ('gossip-fig5',
     'Merge+Imb from a random placement under a static load on the '
     'paper\'s 50,000 PMs and 100,000 VMs, local views k = 10, 20, 30, '
     '50, wall time and peak memory measured; two readings of '
     '"converge"; eq. 13\'s bandwidth at 50,000 PMs from the measured '
     'cycles.', '[PaperIII]_ Fig. 5 and eq. 13'),
    ('headroom-tradeoff',
     'Notice given to victims vs normal requests slowed vs utilisation '
     'given up, at headroom 0, 2.5, 5, 10 and 20 % (summed, or in slots '
     'of the largest normal server), on prefixes of the NASA, HPC2N and '
     'Lublin traces; the model, the table and the recommended default: '
     ':doc:`headroom-tradeoff`.', None),
]

SIMULATOR_INTRO = '''\
=========================
The simulator's scenarios
=========================

``opie-sched simulate`` replays a workload (a Standard Workload Format
trace, or a generated one) on a simulated data centre with the *same*
pure preemption code the Nova scheduler plugins run: the dual host state
([LopezGarcia2019]_ §3), the ranking (Alg. 4) and the exact victim
selection (Alg. 5), next to the baselines ``stock``, ``first-fit`` and
``retry`` (``--policy all``). CSV and PNG go to ``--output-dir``.

Named scenarios reproduce a paper's table or figure and print the paper's
numbers next to ours; a result that does not reproduce is printed with the
reason, never tuned toward the paper's number::

    opie-sched simulate --scenario NAME [--reduced] [--seed N]
        [--discovery local|global] [-f table|json|yaml|value|shell]
        [-c FIELD]

The paper's table next to ours is the ``report`` field (``-c report -f
value`` prints it alone); ``-f json`` has the scenario's whole result.

Where a scenario judges a paper's claims over seeds (``diehard-table2``,
``diehard-tables34``, ``themis-value``'s Fig. 5(b),
``gossip-redistribution``, ``rpm-vs-ffd``, ``rpm-weights``),
it uses one set of rules, ``opie_sched.simulator.verdicts``: ours is the
mean over the seeds with a 95 % Student-t interval; a direction claim
holds only when the interval excludes the reference on the paper's side
(fails when it excludes it on the other side, undecided when it contains
it); a magnitude claim holds when the mean lies in a stated band (20 % of
the paper's value unless the paper gives one), fails when the whole
interval lies outside it, and is undecided otherwise. Each claim is
counted once and each scenario prints its tally, then a sensitivity
table: the same claims under the choices of ours that can flip them,
beside the papers' text (``rpm-weights``: not yet).

``--reduced`` runs the small version of the same experiment that the unit
tests run (seconds instead of minutes); without it, the full experiment.

{tally}
Every scenario runs on the one shared engine described in
:doc:`core`.

.. toctree::
   :hidden:

   core
   headroom-tradeoff

.. important::

   The tables below are **not live**: each was measured once on {date},
   on a shared 2-core machine, with the command shown above it (opie_sched
   as of that day). Re-run the command for current numbers. Each says
   whether it is the full run or the reduced one (fewer jobs, hosts or
   seeds, so absolute values differ) and, if reduced, why.

'''

OPIE_INTRO = '''\
==========
opie-sched
==========

The operator's and researcher's command: preemptible flavors, provider
configs, what-if tools for every algorithm, the simulator, the demo and
the devcloud. Cloud commands take the standard ``--os-cloud`` and
``--os-*`` options of openstacksdk, e.g. ``opie-sched --os-cloud
devstack-admin preempt list``. Every command is a cliff command: output
through cliff's formatters (``-f table|json|yaml|value``, plus ``csv`` for
listings and ``shell`` for single objects; ``-c COLUMN`` selects fields),
usage errors on one line with exit code 2, failures on one line with exit
code 1, progress on standard error.

'''

SPOT_INTRO = '''\
==============
openstack spot
==============

The ``spot`` plugin of python-openstackclient, installed with opie_sched
(entry points ``openstack.cli.extension`` and ``openstack.spot.v1``). It
talks to the market REST API (:doc:`/api/market`) found in the catalog as
service type ``spot-market``, or at ``--os-spot-endpoint`` /
``OS_SPOT_ENDPOINT``. Like every ``openstack`` command it formats its
output with ``-f table|json|yaml|csv|value`` and selects columns with
``-c``.

'''


def fill(text):
    return textwrap.fill(text, 74, break_long_words=False,
                         break_on_hyphens=False)


def title(text, char):
    return '%s\n%s\n' % (text, char * len(text))


def block(text):
    return '.. code-block:: text\n\n%s\n' % textwrap.indent(text, '   ')


def run(argv, timeout):
    """stdout+stderr of ``argv`` and its wall time, or (None, None)."""
    start = datetime.datetime.now()
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              timeout=timeout, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        print('  failed: %s' % exc, file=sys.stderr)
        return None, None
    seconds = (datetime.datetime.now() - start).total_seconds()
    if proc.returncode != 0:
        print('  exit %d' % proc.returncode, file=sys.stderr)
        return None, None
    return proc.stdout.rstrip(), seconds


def usage(bin_dir, argv, timeout):
    print(' '.join(argv + ['--help']), file=sys.stderr)
    text, _ = run([os.path.join(bin_dir, argv[0])] + argv[1:] + ['--help'],
                  timeout)
    if text is None or not text.startswith('usage'):
        return None
    return '\n'.join(line.rstrip() for line in text.splitlines())


def note(date):
    return fill('The usage texts on this page were captured on %s with '
                "each command's ``--help``; the installed command's own "
                '``--help`` is authoritative.' % date) + '\n'


def refresh_cli(bin_dir, date, timeout):
    parts = [OPIE_INTRO, note(date), '\n']
    top = usage(bin_dir, ['opie-sched'], timeout)
    if top is not None:
        parts += [block(top.split('\nAuthentication Options:')[0].rstrip()),
                  '\n', fill('The remaining global options are the '
                             'standard keystoneauth and openstacksdk '
                             '``--os-*`` options (authentication, TLS, '
                             'service selection and API version), as in '
                             'the ``openstack`` client.'), '\n\n']
        if '\nCommands:\n' in top:
            parts += [block('Commands:\n' + top.split(
                '\nCommands:\n', 1)[1]), '\n']
    commands = []
    if top is not None and '\nCommands:\n' in top:
        commands = [c for c in re.findall(
            r'^  ([a-z][\w-]*(?: [a-z][\w-]*)?) {2,}\S',
            top.split('\nCommands:\n', 1)[1], re.M)
            if c not in ('complete', 'help')]
    group = None
    for command in commands:
        if command.split()[0] != group:
            group = command.split()[0]
            parts.append('\n%s\n' % title('opie-sched ' + group, '-'))
        text = usage(bin_dir, ['opie-sched'] + command.split(), timeout)
        if ' ' in command:
            parts.append('\n%s\n' % title('opie-sched ' + command, '~'))
        parts.append(block(text) if text is not None else
                     '(``opie-sched %s --help`` failed)\n' % command)
    write(os.path.join(SOURCE, 'cli', 'opie-sched.rst'), ''.join(parts))

    parts = [SPOT_INTRO, note(date), '\n']
    for command in SPOT:
        text = usage(bin_dir, ['openstack', 'spot'] + command.split(),
                     timeout)
        parts.append('\n%s\n' % title('openstack spot ' + command, '-'))
        parts.append(block(text) if text is not None else
                     '(``openstack spot %s --help`` failed)\n' % command)
    write(os.path.join(SOURCE, 'cli', 'openstack-spot.rst'), ''.join(parts))

    path = os.path.join(SOURCE, 'cli', 'services.rst')
    with open(path) as f:
        page = f.read().split('\nUsage texts\n')[0].rstrip() + '\n'
    page += '\n%s\n%s' % (title('Usage texts', '='), note(date))
    for service in SERVICES:
        text = usage(bin_dir, [service], timeout)
        if text is not None:
            page += '\n%s\n%s' % (title(service + ' --help', '-'),
                                  block(text))
    write(path, page)


#: Scenarios whose page shows the reduced run, and why. gossip-
#: redistribution's full run (200 PMs x 10 seeds, with its sensitivity
#: runs) is on the page from tools/parallel_seeds.py: on the shared 2-core
#: machine on 2026-11-28 (load average 35-55) one process at nice 10 had
#: 85 CPU-seconds in 13 minutes, so the run was split into its 140 calls
#: (4-7 CPU-seconds each, 472 in all) over 36 worker processes at nice
#: 10: 1210 s wall; ``--results DIR`` put it on the page, which says so.
#: themis-value's full run (the first 1000 jobs x 10 seeds, 186 calls of
#: 1-8 CPU-seconds) is on the page from tools/parallel_seeds.py with two
#: workers at nice 19 on 2026-11-28: 3509 s wall, 690 CPU-seconds, beside
#: five engineers' test runs (load average 9-21).
#: rpm-vs-ffd's full run (256 hosts x 24 h x 10 seeds, six settings:
#: 210 calls of 1-15 CPU-seconds) is on the page from
#: tools/parallel_seeds.py with one worker at nice 19 on 2026-11-28:
#: 2043 s wall beside the other engineers' runs (load average 7-10).
#: rpm-weights' full run (256 hosts x 24 h x 10 seeds, five factors at
#: two weights: 100 calls of about 2 CPU-seconds) is on the page from
#: tools/parallel_seeds.py with two workers at nice 10 on a quiet machine.
REDUCED_REASONS = {}
#: Seeds the page's run asks for (``--seed-count``), reduced or not.
SEED_COUNTS = {'gossip-redistribution': 10, 'themis-value': 10,
               'rpm-vs-ffd': 10, 'rpm-weights': 10}


def _from_results(results, name):
    """``(report, seconds, reduced, seed count or None, parallel or
    None)`` of ``results/NAME.json``, or None (``parallel``: the
    ``tools/parallel_seeds.py`` summary when that tool made the file).
    """
    import json
    path = os.path.join(results or '', '%s.json' % name)
    if not results or not os.path.isfile(path):
        return None
    with open(path) as f:
        data = json.load(f)
    count = data.get('seed_count') if name in SEED_COUNTS else None
    return (data.get('report'), data.get('runtime_s'), data.get('reduced'),
            count, data.get('parallel'))


#: Brackets of the tally block in the page's introduction.
TALLY_START, TALLY_END = '.. claims-tally-start', '.. claims-tally-end'
#: A scenario's tally line (opie_sched.simulator.verdicts.tally_text).
TALLY_LINE = re.compile(
    r'^\s*(?P<name>\S.*?): (?P<holds>\d+) hold, (?P<fails>\d+) fail, '
    r'(?P<undecided>\d+) undecided \(of (?P<claims>\d+) claims, each '
    r'counted once\)\s*$', re.M)


def claims_tally(sections):
    """The tally lines of the scenarios' sections: a list of dicts
    ``{'section', 'name', 'run', 'measured', 'holds', 'fails',
    'undecided', 'claims'}`` in page order (``run``: ``full`` or
    ``reduced``, from the section's own words; ``measured``: its date).
    """
    out = []
    for section, text in sections.items():
        run_kind = ('reduced' if re.search(r'^Reduced run', text, re.M)
                    else 'full')
        when = re.search(r'measured on (\d{4}-\d\d-\d\d)', text)
        for m in TALLY_LINE.finditer(text):
            row = {k: int(v) if v.isdigit() else v
                   for k, v in m.groupdict().items()}
            row.update(section=section, run=run_kind,
                       measured=when.group(1) if when else '')
            out.append(row)
    return out


def tally_table(rows):
    """``rows`` of :func:`claims_tally` as a plain text table."""
    head = ['scenario', 'run', 'measured', 'hold', 'fail', 'undecided',
            'claims']
    body = [[r['name'], r['run'], r['measured']]
            + [str(r[k]) for k in ('holds', 'fails', 'undecided',
                                   'claims')] for r in rows]
    total = [sum(r[k] for r in rows) for k in ('holds', 'fails',
                                               'undecided', 'claims')]
    body.append(['all', '', ''] + [str(t) for t in total])
    widths = [max(len(x) for x in col) for col in zip(head, *body)]

    def line(cells):
        return '  '.join(c.ljust(w) if i < 3 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))
    return '\n'.join([line(head), line(['-' * w for w in widths])]
                     + [line(b) for b in body]).rstrip()


def tally_block(sections):
    """The introduction's tally of claims, bracketed by
    :data:`TALLY_START` and :data:`TALLY_END` (rst comments).
    """
    rows = claims_tally(sections)
    text = [TALLY_START, '', fill(
        'Claims judged over seeds, by scenario (each claim counted once; '
        'the scenario\'s section below has the claims table, its '
        'sensitivity table and the command; ``python '
        'doc/tools/refresh_reference.py --tally`` prints this table from '
        'the page, or from ``--results DIR``). "reduced" says the run is '
        'smaller than the full configuration; the section says why:'), '']
    if rows:
        text.append(block(tally_table(rows)))
    else:
        text.append('(no scenario section with a tally yet)\n')
    return '\n'.join(text) + '\n' + TALLY_END + '\n'


def with_tally(intro, sections):
    """``intro`` with its tally block (re)written from ``sections``
    (inserted before the engine paragraph when the page has none).
    """
    new = tally_block(sections)
    if TALLY_START in intro and TALLY_END in intro:
        head, rest = intro.split(TALLY_START, 1)
        return head + new + '\n' + rest.split(TALLY_END, 1)[1].lstrip('\n')
    anchor = 'Every scenario runs on the one shared engine'
    if anchor in intro:
        head, rest = intro.split(anchor, 1)
        return head + new + '\n' + anchor + rest
    return intro + '\n' + new


def print_tally(results=None, out=sys.stdout):
    """Print the tally of claims by scenario (:func:`tally_table`) from
    the simulator page's sections, a scenario's ``results/NAME.json``
    (``opie-sched simulate -f json``) taking its section's place when it
    exists. Runs nothing.
    """
    with open(os.path.join(SOURCE, 'simulator', 'index.rst')) as f:
        _, sections = split_sections(f.read())
    for name, _, _ in SCENARIOS:
        stored = _from_results(results, name)
        if stored is not None and stored[0]:
            path = os.path.join(results, '%s.json' % name)
            when = datetime.datetime.fromtimestamp(
                os.path.getmtime(path), datetime.timezone.utc)
            sections[name] = '%s, measured on %s\n%s' % (
                'Reduced run' if stored[2] else 'Full run',
                when.date().isoformat(), stored[0])
    print(tally_table(claims_tally(sections)), file=out)


def split_sections(text):
    """``(intro, {name: section})`` of the simulator page's text.

    A section starts at a scenario's title (its name underlined with
    ``=``) and runs to the next scenario's title.
    """
    names = [name for name, _, _ in SCENARIOS]
    starts = []
    for name in names:
        found = re.search(r'^%s\n=+\n' % re.escape(name), text, re.M)
        if found:
            starts.append((found.start(), name))
    starts.sort()
    if not starts:
        return text, {}
    sections = {}
    for i, (at, name) in enumerate(starts):
        end = starts[i + 1][0] if i + 1 < len(starts) else len(text)
        sections[name] = text[at:end]
    return text[:starts[0][0]], sections


def refresh_scenarios(bin_dir, date, timeout, reduced=(), results=None,
                      only=None):
    """Rewrite the simulator page, or with ``only`` (scenario names) its
    named sections, the others kept as they are on the page.

    :raises SystemExit: a name of ``only`` is not a scenario.
    """
    known = [name for name, _, _ in SCENARIOS]
    unknown = sorted(set(only or ()) - set(known))
    if unknown:
        raise SystemExit('unknown scenario(s): %s (known: %s)'
                         % (', '.join(unknown), ', '.join(known)))
    path = os.path.join(SOURCE, 'simulator', 'index.rst')
    kept = {}
    intro = SIMULATOR_INTRO.replace('{date}', date)
    if only:
        with open(path) as f:
            intro, kept = split_sections(f.read())
    done = {}
    for name, what, paper in SCENARIOS:
        if only and name not in only:
            if name in kept:
                done[name] = kept[name]
            continue
        parts = done[name] = []
        parts.append('%s\n' % title(name, '='))
        parts.append(fill(what + (' Paper: %s.' % paper if paper else ''))
                     + '\n\n')
        small = name in reduced or name in REDUCED_REASONS
        if name == 'nasa-backfill':
            args = ['--scenario', name, '--no-plot', '--progress-every',
                    '0']
        else:
            args = ['--scenario', name] + (['--reduced'] if small else []) \
                + (['--seed-count', str(SEED_COUNTS[name])]
                   if name in SEED_COUNTS else []) \
                + ['-c', 'report', '-f', 'value']
        shown = 'opie-sched simulate %s --output-dir DIR' % ' '.join(args)
        stored = _from_results(results, name)
        if stored is not None and stored[0]:
            text, seconds, small, count, parallel = stored
            shown = 'opie-sched simulate --scenario %s%s%s -f json' % (
                name, ' --reduced' if small else '',
                ' --seed-count %d' % count if count else '')
            how = 'its ``report`` field'
            if parallel:
                how += (
                    '; computed by ``tools/parallel_seeds.py %s %d%s`` '
                    'niced, whose %d worker processes ran '
                    'the seeds\' calls and whose parent then ran the '
                    'scenario on them, which gives the command\'s '
                    'result' % (name, parallel['workers'],
                                ' reduced' if small else '',
                                parallel['workers']))
        else:
            print(shown, file=sys.stderr)
            how = 'start-up included'
            with tempfile.TemporaryDirectory() as out:
                text, seconds = run(
                    [os.path.join(bin_dir, 'opie-sched'), 'simulate']
                    + args + ['--output-dir', out], timeout)
                if text is not None:
                    text = text.replace(out, 'DIR')
        if text is None:
            parts.append('Not measured on %s: ``%s`` failed.\n\n'
                         % (date, shown))
            continue
        text = '\n'.join(line.rstrip() for line in text.splitlines())
        kind = 'Full run' if not small or name == 'nasa-backfill' else (
            'Reduced run (%s)' % REDUCED_REASONS.get(
                name, 'asked for with --reduced'))
        parts.append(fill('%s, measured on %s with ``%s`` (%.1f s wall '
                          'time, %s):' % (kind, date, shown, seconds or 0.0,
                                          how))
                     + '\n\n' + block(text) + '\n')
    done = {name: text if isinstance(text, str) else ''.join(text)
            for name, text in done.items()}
    if '{tally}' in intro:
        intro = intro.replace('{tally}\n', tally_block(done) + '\n')
    else:
        intro = with_tally(intro, done)
    write(path, (intro + ''.join(done.values())).rstrip() + '\n')


def write(path, text):
    with open(path, 'w') as f:
        f.write(text)
    print('wrote %s' % os.path.relpath(path, ROOT), file=sys.stderr)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--bin-dir', default=os.path.dirname(sys.executable),
                        help='where opie-sched, openstack and the services '
                             'are installed (default: next to this Python)')
    parser.add_argument('--only', choices=['cli', 'scenarios'],
                        help='refresh only one part')
    parser.add_argument('--timeout', type=float, default=600.0,
                        help='seconds per command (default 600)')
    parser.add_argument('--reduced', default='',
                        help='comma-separated scenarios to show reduced '
                             '(besides those of REDUCED_REASONS)')
    parser.add_argument('--results', default=None,
                        help='directory of NAME.json results (opie-sched '
                             'simulate -f json) to use instead of running')
    parser.add_argument('--scenario', default='',
                        help='comma-separated scenarios: refresh only their '
                             'sections of the simulator page, keep the '
                             'others')
    parser.add_argument('--tally', action='store_true',
                        help='print the tally of claims judged over seeds, '
                             'by scenario, from the simulator page (and '
                             '--results), and stop; runs nothing')
    args = parser.parse_args(argv)
    if args.tally:
        print_tally(args.results)
        return 0
    date = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    if args.only in (None, 'cli'):
        refresh_cli(args.bin_dir, date, args.timeout)
    if args.only in (None, 'scenarios'):
        refresh_scenarios(args.bin_dir, date, args.timeout,
                          [n for n in args.reduced.split(',') if n],
                          args.results,
                          [n for n in args.scenario.split(',') if n])
    return 0


if __name__ == '__main__':
    sys.exit(main())
