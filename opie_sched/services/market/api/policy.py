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
"""oslo.policy rules of the opie-market API (defaults in code).

The defaults follow nova's secure-RBAC personas (Keystone's default roles
``reader`` < ``member`` < ``admin``, plus ``service`` for the cloud's own
services), every rule with ``scope_types=['project']``:

============================  ============================================
persona                       may
============================  ============================================
project reader                read prices, its servers' bids, its account,
                              ledger, notices and event history, placement
                              scores and interruption histories
project member                the above, set or unset its bids, send
                              its preemptible servers through an
                              interruption drill, and acknowledge their
                              notices
admin (``role:admin``)        everything, any project (the market's
                              operators: credit, reserve prices, shares)
service (``role:service``)    what the cloud's services need: read and set
                              any bid (autoscaler), read shares (repacker)
another project               prices only; its bids look absent (404), its
                              account and ledger are forbidden (403)
============================  ============================================

Targets carry the ``project_id`` owning the object (a server's project for
bids, the account's project for accounts, ledgers and notices; the
caller's own project for prices).

Each rule whose name or check changed keeps its old name and the old
``rule:admin_or_owner`` check as an oslo.policy *deprecated rule*: a
policy file that overrides an old name still applies, and with
``[oslo_policy] enforce_new_defaults = False`` the old check is OR-ed with
the new one for one deprecation cycle. :func:`enforcer` defaults
``enforce_new_defaults`` and ``enforce_scope`` to True, as nova does.

Operators override rules in the policy file of ``[oslo_policy]
policy_file``; ``oslopolicy-sample-generator --namespace
opie_sched.market`` lists them (entry point ``oslo.policy.policies =
opie_sched.market = opie_sched.services.market.api.policy:list_rules``).
"""

from oslo_policy import opts as policy_opts
from oslo_policy import policy

#: Release that deprecated the ``admin_or_owner`` defaults.
DEPRECATED_SINCE = '2026.2'
DEPRECATED_REASON = (
    'The market API now understands the reader, member, admin and service '
    'roles (secure RBAC): a project reader may no longer change bids.')

ADMIN = 'rule:context_is_admin'
PROJECT_READER_OR_ADMIN = 'rule:project_reader_or_admin'
PROJECT_MEMBER_OR_ADMIN = 'rule:project_member_or_admin'
SERVICE_OR_ADMIN = 'rule:service_or_admin'
PROJECT_READER_OR_SERVICE = 'rule:project_reader_or_admin or rule:service_api'
PROJECT_MEMBER_OR_SERVICE = 'rule:project_member_or_admin or rule:service_api'
LEGACY_ADMIN_OR_OWNER = 'rule:admin_or_owner'

PRICES_LIST = 'opie_market:prices:list'
PRICES_HISTORY = 'opie_market:prices:history'
FLAVOR_PRICE_SHOW = 'opie_market:flavor_price:show'
BID_SHOW = 'opie_market:bid:show'
BID_UPDATE = 'opie_market:bid:update'
BID_DELETE = 'opie_market:bid:delete'
ACCOUNT_SHOW = 'opie_market:account:show'
LEDGER_LIST = 'opie_market:ledger:list'
NOTICES_LIST = 'opie_market:notices:list'
ACCOUNT_CREDIT = 'opie_market:account:credit'
RESERVE_UPDATE = 'opie_market:reserve_price:update'
SHARES_LIST = 'opie_market:shares:list'
PLACEMENT_SCORE_SHOW = 'opie_market:placement_score:show'
INTERRUPTION_HISTORY_SHOW = 'opie_market:interruption_history:show'
EVENTS_LIST = 'opie_market:events:list'
INTERRUPTION_DRILL_CREATE = 'opie_market:interruption_drill:create'
INTERRUPTION_ACK_CREATE = 'opie_market:interruption_ack:create'

#: Names before secure RBAC (deprecated; their overrides still apply).
OLD_NAMES = {
    PRICES_LIST: 'opie_market:prices:get',
    BID_SHOW: 'opie_market:bid:get',
    BID_UPDATE: 'opie_market:bid:set',
    ACCOUNT_SHOW: 'opie_market:account:get',
    LEDGER_LIST: 'opie_market:ledger:get',
    RESERVE_UPDATE: 'opie_market:reserve_price:set',
    SHARES_LIST: 'opie_market:shares:get',
}
#: Old default check strings of the renamed rules.
OLD_CHECKS = {
    PRICES_LIST: '',
    BID_SHOW: LEGACY_ADMIN_OR_OWNER,
    BID_UPDATE: LEGACY_ADMIN_OR_OWNER,
    ACCOUNT_SHOW: LEGACY_ADMIN_OR_OWNER,
    LEDGER_LIST: LEGACY_ADMIN_OR_OWNER,
    RESERVE_UPDATE: ADMIN,
    SHARES_LIST: ADMIN,
}
#: Rules whose old default was ``''`` (anyone) or ``admin_or_owner`` and
#: whose name did not change.
OLD_SAME_NAME = {PRICES_HISTORY: ''}

PROJECT = ['project']

BASE_RULES = [
    policy.RuleDefault('context_is_admin', 'role:admin',
                       description='Operators of the market (any project '
                                   'with the admin role).'),
    policy.RuleDefault(
        'admin_or_owner', 'rule:context_is_admin or '
        'project_id:%(project_id)s',
        description='Legacy: the owning project with any role, or an admin. '
                    'No default uses it any more.',
        deprecated_for_removal=True, deprecated_reason=DEPRECATED_REASON,
        deprecated_since=DEPRECATED_SINCE),
    policy.RuleDefault('project_reader_api',
                       'role:reader and project_id:%(project_id)s',
                       description='A reader of the owning project.'),
    policy.RuleDefault('project_member_api',
                       'role:member and project_id:%(project_id)s',
                       description='A member of the owning project.'),
    policy.RuleDefault('service_api', 'role:service',
                       description='A service user of the cloud (the '
                                   'autoscaler, the repacker).'),
    policy.RuleDefault('project_reader_or_admin',
                       'rule:project_reader_api or rule:context_is_admin',
                       description='A reader of the owning project, or an '
                                   'admin.'),
    policy.RuleDefault('project_member_or_admin',
                       'rule:project_member_api or rule:context_is_admin',
                       description='A member of the owning project, or an '
                                   'admin.'),
    policy.RuleDefault('service_or_admin',
                       'rule:service_api or rule:context_is_admin',
                       description='A service user, or an admin.'),
]


def _rule(name, check, description, operations):
    deprecated = None
    if name in OLD_NAMES or name in OLD_SAME_NAME:
        deprecated = policy.DeprecatedRule(
            name=OLD_NAMES.get(name, name),
            check_str=OLD_CHECKS.get(name, OLD_SAME_NAME.get(name)),
            deprecated_reason=DEPRECATED_REASON,
            deprecated_since=DEPRECATED_SINCE)
    return policy.DocumentedRuleDefault(
        name, check, description, operations, scope_types=PROJECT,
        deprecated_rule=deprecated)


API_RULES = [
    _rule(PRICES_LIST, PROJECT_READER_OR_SERVICE,
          'Current spot prices (target: the caller\'s project).',
          [{'path': '/v1/prices', 'method': 'GET'}]),
    _rule(PRICES_HISTORY, PROJECT_READER_OR_SERVICE,
          'Spot price history over a time range.',
          [{'path': '/v1/prices/history', 'method': 'GET'}]),
    _rule(FLAVOR_PRICE_SHOW, PROJECT_READER_OR_SERVICE,
          'What a flavor costs per hour now and over the last hours, per '
          'pool and availability zone (microversion 1.1).',
          [{'path': '/v1/flavor-prices', 'method': 'GET'}]),
    _rule(BID_SHOW, PROJECT_READER_OR_SERVICE,
          "A server's bid (others get 404).",
          [{'path': '/v1/servers/{server_id}/bid', 'method': 'GET'}]),
    _rule(BID_UPDATE, PROJECT_MEMBER_OR_SERVICE,
          "Set a server's bid (a reader of the project gets 403, another "
          "project 404).",
          [{'path': '/v1/servers/{server_id}/bid', 'method': 'PUT'}]),
    _rule(BID_DELETE, PROJECT_MEMBER_OR_SERVICE,
          "Remove a server's bid: it falls back to its flavor's or the "
          "default bid (microversion 1.1).",
          [{'path': '/v1/servers/{server_id}/bid', 'method': 'DELETE'}]),
    _rule(ACCOUNT_SHOW, PROJECT_READER_OR_SERVICE,
          "A project's account.",
          [{'path': '/v1/account', 'method': 'GET'}]),
    _rule(LEDGER_LIST, PROJECT_READER_OR_SERVICE,
          "A project's ledger.",
          [{'path': '/v1/account/ledger', 'method': 'GET'}]),
    _rule(NOTICES_LIST, PROJECT_READER_OR_SERVICE,
          "A project's preemption notices (microversion 1.1).",
          [{'path': '/v1/notices', 'method': 'GET'}]),
    _rule(ACCOUNT_CREDIT, ADMIN, 'Grant credit to a project.',
          [{'path': '/v1/accounts/{project_id}/credit', 'method': 'POST'}]),
    _rule(RESERVE_UPDATE, ADMIN, 'Set reserve prices.',
          [{'path': '/v1/reserve-price', 'method': 'PUT'}]),
    _rule(PLACEMENT_SCORE_SHOW, PROJECT_READER_OR_SERVICE,
          'Whether servers of a flavor would fit now, per availability '
          'zone: on free room, only by preempting, out of bid, or not at '
          'all (microversion 1.2; target: the caller\'s project).',
          [{'path': '/v1/placement-score', 'method': 'GET'}]),
    _rule(INTERRUPTION_HISTORY_SHOW, PROJECT_READER_OR_SERVICE,
          'Interruption rates and the survival curve of a flavor\'s '
          'servers, every project\'s servers counted, none named '
          '(microversion 1.2).',
          [{'path': '/v1/interruption-history', 'method': 'GET'}]),
    _rule(EVENTS_LIST, PROJECT_READER_OR_SERVICE,
          "A project's event history: at-risk marks, notices, "
          "interruptions, restores, drills (microversion 1.2).",
          [{'path': '/v1/events', 'method': 'GET'}]),
    _rule(INTERRUPTION_DRILL_CREATE, PROJECT_MEMBER_OR_ADMIN,
          "Send one's own preemptible server through a real interruption "
          "(at-risk mark, notice, its flavor's behaviour at the deadline), "
          "recorded as a drill, never charged, never counted in prices or "
          "interruption rates; at most [opie_market] drill_limit per "
          "project and drill_window (a reader of the project gets 403, "
          "another project 404; microversion 1.3).",
          [{'path': '/v1/servers/{server_id}/interruption-drill',
            'method': 'POST'}]),
    _rule(INTERRUPTION_ACK_CREATE, PROJECT_MEMBER_OR_ADMIN,
          "Acknowledge the preemption notice pending on one's own server "
          "(the market's or the scheduler's): its flavor's interruption "
          "behaviour runs now, recorded as an ack event, never charged "
          "(a reader of the project gets 403, another project 404; "
          "microversion 1.4).",
          [{'path': '/v1/servers/{server_id}/interruption-ack',
            'method': 'POST'}]),
    _rule(SHARES_LIST, SERVICE_OR_ADMIN,
          "Every preemptible server's per-host share and allocation error "
          "(who is under-served; the repacker's tabu strategy reads it).",
          [{'path': '/v1/shares', 'method': 'GET'}]),
]


def list_rules():
    """Every rule with its default."""
    return BASE_RULES + API_RULES


def enforcer(conf):
    """An oslo.policy Enforcer over ``conf`` with the defaults registered;
    ``enforce_new_defaults`` and ``enforce_scope`` default to True.
    """
    policy_opts.set_defaults(conf, enforce_scope=True,
                             enforce_new_defaults=True)
    enf = policy.Enforcer(conf)
    enf.register_defaults(list_rules())
    return enf
