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
"""``opie-sched preempt``: what the preemption phase would do, and did.

``opie-sched preempt explain SNAPSHOT.json`` reads a snapshot (see
:mod:`opie_sched.preemption.snapshot`) and prints the host and victims the
scheduler's preemption phase would choose, with the same planner code the
scheduler runs. Host choice here is the preemption-cost ranking alone: hosts
needing no preemption first, then least total victim cost, then host name.

``opie-sched preempt list [--since TIME]`` asks a cloud (openstacksdk) which
servers were preempted: every server, deleted or not, whose instance actions
hold the ``preempt`` action the opie scheduler and reconciler record.
"""

import json
import sys

from oslo_utils import timeutils

from opie_sched.cmd import cli

from opie_sched.preemption import costs
from opie_sched.preemption import planner
from opie_sched.preemption import snapshot


def explain(snap, policy):
    """The decision as a JSON-ready dict.

    ``{"host": str|None, "victims": [{"uuid", "cost"}], "total_cost": float}``
    plus ``"reason"`` when no host fits even after preemption, and
    ``"ranking"`` (every host's plan, best first).
    """
    plans = planner.rank_hosts(snap.hosts, snap.request, policy, snap.now)
    ranking = [{'host': p.host, 'needs_preemption': p.needs_preemption,
                'feasible': p.feasible, 'total_cost': p.total_cost,
                'victims': [i.uuid for i, _ in p.victims]}
               for p in plans]
    best = plans[0] if plans else None
    if best is None or not best.feasible:
        reasons = '; '.join('%s %s' % (p.host, p.reason) for p in plans)
        return {'host': None, 'victims': [], 'total_cost': 0.0,
                'reason': ('no host can fit the request even after '
                           'preemption' + (': ' + reasons if reasons
                                           else ': no hosts')),
                'ranking': ranking}
    return {'host': best.host,
            'victims': [{'uuid': i.uuid, 'cost': c} for i, c in best.victims],
            'total_cost': best.total_cost, 'ranking': ranking}


def format_table(result):
    lines = []
    if result['host'] is None:
        lines.append('host: none (%s)' % result['reason'])
    else:
        lines.append('host: %s' % result['host'])
        if result['victims']:
            lines.append('%-38s %12s' % ('victim', 'cost'))
            for v in result['victims']:
                lines.append('%-38s %12g' % (v['uuid'], v['cost']))
            lines.append('%-38s %12g' % ('total', result['total_cost']))
        else:
            lines.append('no preemption needed')
    lines.append('')
    lines.append('%-20s %-10s %12s  %s'
                 % ('ranking', 'preempt', 'cost', 'victims'))
    for r in result['ranking']:
        lines.append('%-20s %-10s %12s  %s' % (
            r['host'],
            'no' if not r['needs_preemption'] else
            ('yes' if r['feasible'] else 'impossible'),
            '%g' % r['total_cost'], ','.join(r['victims'])))
    return '\n'.join(lines)


def _explain(args):
    snap = snapshot.load(args.snapshot)
    policy = costs.load_policy(args.cost, period=args.billing_period)
    result = explain(snap, policy)
    if args.format == 'json':
        out = dict(result)
        if not args.ranking:
            out.pop('ranking')
        sys.stdout.write(json.dumps(out, indent=2) + '\n')
    else:
        sys.stdout.write(format_table(result) + '\n')
    return 0


#: The instance action recorded on every victim (see
#: :mod:`opie_sched.scheduler.actions`; repeated here so that this client
#: command does not import nova).
PREEMPT_ACTION = 'preempt'


def preempted_servers(conn, since=None):
    """Servers of all projects that were preempted.

    :param conn: ``openstack.connection.Connection`` with admin rights.
    :param since: only servers changed since this ISO 8601 time (str).
    :returns: list of dicts ``{"id", "name", "project_id", "status",
        "preempted_at", "request_id"}``, oldest preemption first;
        ``request_id`` is the preemptor's request (or the reconciler's).
    """
    query = {'all_projects': True}
    if since:
        query['changes_since'] = since
    found = {}
    for deleted in (False, True):
        for server in conn.compute.servers(details=True, deleted=deleted,
                                           **query):
            found[server.id] = server
    result = []
    for server in found.values():
        for action in conn.compute.server_actions(server.id):
            if action.action == PREEMPT_ACTION:
                result.append({'id': server.id, 'name': server.name,
                               'project_id': server.project_id,
                               'status': server.status,
                               'preempted_at': action.start_time,
                               'request_id': action.request_id})
                break
    result.sort(key=lambda r: (r['preempted_at'] or '', r['id']))
    return result


def _list(args):
    since = None
    if args.since:
        try:
            since = timeutils.parse_isotime(args.since).isoformat()
        except ValueError as exc:
            raise cli.UsageError('--since: %s' % exc)
    rows = preempted_servers(cli.connect(args), since)
    if args.format == 'json':
        sys.stdout.write(json.dumps(rows, indent=2) + '\n')
        return 0
    fmt = '%-36s  %-20s  %-10s  %-26s  %s'
    lines = [fmt % ('server', 'name', 'status', 'preempted at', 'request')]
    lines += [fmt % (r['id'], r['name'], r['status'], r['preempted_at'],
                     r['request_id']) for r in rows]
    sys.stdout.write('\n'.join(lines) + '\n')
    return 0


def register(subparsers):
    parser = subparsers.add_parser(
        'preempt', help='what-if tools for the preemption phase')
    sub = parser.add_subparsers(dest='preempt_command', metavar='COMMAND')
    sub.required = True
    ex = sub.add_parser(
        'explain', help='print the host and victims the preemption phase '
                        'would choose for a snapshot')
    ex.add_argument('snapshot', metavar='SNAPSHOT.json')
    ex.add_argument('--cost', default='billing_period',
                    help='cost modules, name[:multiplier],... '
                         '(default: %(default)s)')
    ex.add_argument('--billing-period', type=int, default=3600,
                    metavar='SECONDS',
                    help='billing period for billing_period '
                         '(default: %(default)s)')
    ex.add_argument('--format', choices=['json', 'table'], default='json')
    ex.add_argument('--ranking', action='store_true',
                    help='include every host\'s plan in the JSON output')
    ex.set_defaults(func=_explain,
                    errors=(snapshot.SnapshotError, costs.CostModuleError))
    ls = sub.add_parser(
        'list', help='list the servers of a cloud that were preempted '
                     '(admin)')
    ls.add_argument('--since', metavar='TIME',
                    help='only servers changed since this ISO 8601 time')
    ls.add_argument('--format', choices=['json', 'table'], default='table')
    ls.set_defaults(func=_list, errors=())
