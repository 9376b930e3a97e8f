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

Targets carry the ``project_id`` owning the object (a server's project
for bids, the account's project for accounts and ledgers). Operators
override rules in the policy file of ``[oslo_policy] policy_file``;
``oslopolicy-sample-generator --namespace opie_sched.market`` lists them
(entry point ``oslo.policy.policies = opie_sched.market =
opie_sched.services.market.api.policy:list_rules``).
"""

from oslo_policy import policy

ADMIN = 'rule:context_is_admin'
ADMIN_OR_OWNER = 'rule:admin_or_owner'

PRICES_GET = 'opie_market:prices:get'
PRICES_HISTORY = 'opie_market:prices:history'
BID_GET = 'opie_market:bid:get'
BID_SET = 'opie_market:bid:set'
ACCOUNT_GET = 'opie_market:account:get'
LEDGER_GET = 'opie_market:ledger:get'
ACCOUNT_CREDIT = 'opie_market:account:credit'
RESERVE_SET = 'opie_market:reserve_price:set'
SHARES_GET = 'opie_market:shares:get'

BASE_RULES = [
    policy.RuleDefault('context_is_admin', 'role:admin',
                       description='Operators of the market.'),
    policy.RuleDefault('admin_or_owner',
                       'rule:context_is_admin or '
                       'project_id:%(project_id)s',
                       description='The owning project, or an admin.'),
]

API_RULES = [
    policy.DocumentedRuleDefault(
        PRICES_GET, '', 'Current spot prices.',
        [{'path': '/v1/prices', 'method': 'GET'}]),
    policy.DocumentedRuleDefault(
        PRICES_HISTORY, '', 'Spot price history over a time range.',
        [{'path': '/v1/prices/history', 'method': 'GET'}]),
    policy.DocumentedRuleDefault(
        BID_GET, ADMIN_OR_OWNER, "A server's bid (owner or admin; others "
        "get 404).", [{'path': '/v1/servers/{server_id}/bid',
                       'method': 'GET'}]),
    policy.DocumentedRuleDefault(
        BID_SET, ADMIN_OR_OWNER, "Set a server's bid (owner or admin; "
        "others get 404).", [{'path': '/v1/servers/{server_id}/bid',
                              'method': 'PUT'}]),
    policy.DocumentedRuleDefault(
        ACCOUNT_GET, ADMIN_OR_OWNER, "A project's account.",
        [{'path': '/v1/account', 'method': 'GET'}]),
    policy.DocumentedRuleDefault(
        LEDGER_GET, ADMIN_OR_OWNER, "A project's ledger.",
        [{'path': '/v1/account/ledger', 'method': 'GET'}]),
    policy.DocumentedRuleDefault(
        ACCOUNT_CREDIT, ADMIN, 'Grant credit to a project.',
        [{'path': '/v1/accounts/{project_id}/credit', 'method': 'POST'}]),
    policy.DocumentedRuleDefault(
        RESERVE_SET, ADMIN, 'Set reserve prices.',
        [{'path': '/v1/reserve-price', 'method': 'PUT'}]),
    policy.DocumentedRuleDefault(
        SHARES_GET, ADMIN, "Every preemptible server's per-host share and "
        "allocation error (who is under-served).",
        [{'path': '/v1/shares', 'method': 'GET'}]),
]


def list_rules():
    """Every rule with its default."""
    return BASE_RULES + API_RULES


def enforcer(conf):
    """An oslo.policy Enforcer over ``conf`` with the defaults
    registered.
    """
    enf = policy.Enforcer(conf)
    enf.register_defaults(list_rules())
    return enf
