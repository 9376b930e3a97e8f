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
:mod:`opie_sched.preemption.snapshot`) and shows the host and victims the
scheduler's preemption phase would choose, with the same planner code the
scheduler runs. Host choice here is the preemption-cost ranking alone: hosts
needing no preemption first, then least total victim cost, then host name.

``opie-sched preempt list [--since TIME]`` asks a cloud (openstacksdk) which
servers were preempted: every server, deleted or not, whose instance actions
hold the ``preempt`` action the opie scheduler and reconciler record.
"""

from oslo_utils import timeutils

from opie_sched.cmd import cli
from opie_sched.cmd import columns
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
        ``request_id`` is the preemption decision's own request id (never
        the preemptor's, which owners must not see; the scheduler's log
        line "terminated under request id" maps the two).
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


#: Columns of ``preempt list`` (the keys of :func:`preempted_servers`).
LIST_COLUMNS = ('id', 'name', 'project_id', 'status', 'preempted_at',
                'request_id')

#: Nested columns of ``preempt explain`` (headings, keys).
_VICTIMS = (('victim', 'uuid'), ('cost', 'cost'))
_RANKING = (('host', 'host'),
            ('preempt', lambda r: 'no' if not r['needs_preemption'] else
             ('yes' if r['feasible'] else 'impossible')),
            ('cost', 'total_cost'), ('victims', 'victims'))


class Explain(cli.ShowOne):
    """Show the host and victims preemption would choose for a snapshot.

    Reads SNAPSHOT.json (see opie_sched.preemption.snapshot) and runs the
    scheduler's own planner code on it. Host choice here is the
    preemption-cost ranking alone: hosts needing no preemption first, then
    least total victim cost, then host name. Fields: host (none when no
    host fits even after preemption, with the reason), victims (uuid,
    cost), total_cost, and with --ranking every host's plan, best first.
    """

    errors = (snapshot.SnapshotError, costs.CostModuleError)

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('snapshot', metavar='SNAPSHOT.json')
        parser.add_argument('--cost', default='billing_period',
                            help='cost modules, name[:multiplier],... '
                                 '(default: %(default)s)')
        parser.add_argument('--billing-period', type=int, default=3600,
                            metavar='SECONDS',
                            help='billing period for billing_period '
                                 '(default: %(default)s)')
        parser.add_argument('--ranking', action='store_true',
                            help='include every host\'s plan (the '
                                 'ranking field)')
        return parser

    def take_action(self, args):
        snap = snapshot.load(args.snapshot)
        policy = costs.load_policy(args.cost, period=args.billing_period)
        result = explain(snap, policy)
        fields = ['host', 'victims', 'total_cost']
        values = [result['host'],
                  columns.Table(result['victims'], _VICTIMS),
                  columns.Number(result['total_cost'])]
        if 'reason' in result:
            fields.append('reason')
            values.append(result['reason'])
        if args.ranking:
            fields.append('ranking')
            values.append(columns.Table(result['ranking'], _RANKING))
        return fields, values


class List(cli.Lister):
    """List the servers of a cloud that were preempted (admin).

    Every server, deleted or not, whose instance actions hold the
    preempt action the opie scheduler and reconciler record, oldest
    preemption first; request_id is the preemption decision's own
    request id (the scheduler's log maps it to the preemptor's request).
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--since', metavar='TIME',
                            help='only servers changed since this ISO 8601 '
                                 'time')
        return parser

    def take_action(self, args):
        since = None
        if args.since:
            try:
                since = timeutils.parse_isotime(args.since).isoformat()
            except ValueError as exc:
                raise cli.UsageError('--since: %s' % exc)
        rows = preempted_servers(cli.connect(self.app.options), since)
        return LIST_COLUMNS, [[r[c] for c in LIST_COLUMNS] for r in rows]
