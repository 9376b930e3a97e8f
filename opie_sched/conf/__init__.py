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
"""oslo.config options of opie_sched.

Groups:

* ``[opie_preemption]`` — the preemption phase in the scheduler, its cost
  modules and weighers, and how victims are terminated.
* ``[opie_reconciler]`` — the periodic repair of overcommitted hosts.
* ``[opie_rpm]``, ``[opie_reliability]`` — RPM and Die-Hard scheduler
  plugins (:mod:`opie_sched.conf.rpm`).
* ``[opie_autoscaler]`` — the repacking autoscaler
  (:mod:`opie_sched.conf.autoscaler`).
* ``[opie_repacker]`` — the RPM consolidation service (live migration)
  (:mod:`opie_sched.conf.repacker`).

``list_opts`` is the ``oslo.config.opts`` entry point, so
``oslo-config-generator --namespace opie_sched`` documents every option.
"""

from oslo_config import cfg

from opie_sched.common import credentials
from opie_sched.conf import autoscaler as autoscaler_opts
from opie_sched.conf import repacker as repacker_opts
from opie_sched.conf import rpm as rpm_opts
from opie_sched.preemption import behaviours
from opie_sched.preemption import headroom

preemption_group = cfg.OptGroup(
    'opie_preemption',
    title='Preemptible instances',
    help='How the scheduler makes room for normal instances by terminating '
         'preemptible ones (López García et al., §3).')

preemption_opts = [
    cfg.BoolOpt(
        'enabled', default=True,
        help='Run the preemption phase in opie-scheduler: after a normal '
             'request is claimed on a host whose full state is over '
             'capacity, terminate the cheapest preemptible instances there. '
             'When False the reconciler alone repairs overcommitted hosts.'),
    cfg.BoolOpt(
        'transparent_normal_placement', default=False,
        help='How opie-scheduler filters and weighs a normal (not '
             'preemptible) request. Possible values: False (default) - on '
             'the full state, as López García et al. do: nova\'s filters '
             'and weighers see every instance, and PreemptionCostWeigher '
             'and PreemptibleCountWeigher send a normal server first where '
             'no preemptible instance must die, so fewer die; where normal '
             'servers land then depends on the preemptible ones, and a '
             'later normal request can find the normal state packed '
             'differently than on a cloud without them. True - on the '
             'normal state: every filter and weigher sees each host as a '
             'cloud without preemptible instances would (their vCPU, RAM, '
             'disk, instance and I/O counts taken out of the HostState), '
             'PreemptionCostWeigher and PreemptibleCountWeigher weigh '
             'every host alike, and the victims are chosen afterwards on '
             'the chosen host; normal servers land exactly where they '
             'would without preemptible instances, at the price of more '
             'preemptions. Preemptible requests are always filtered and '
             'weighed on the full state.'),
    cfg.ListOpt(
        'cost_modules', default=['billing_period:1.0'],
        help='Cost modules and their multipliers, ``name[:multiplier]``. '
             'Names are entry points in the ``opie_sched.preemption.costs`` '
             'namespace: billing_period (seconds into the current billing '
             'period), runtime (seconds run), count (1 per victim), waste '
             '(fraction of the host freed). The cost of a victim set is the '
             'sum over victims of Σ multiplier × module cost.'),
    cfg.IntOpt(
        'billing_period', default=3600, min=1,
        help='Billing period of preemptible instances in seconds, for the '
             'billing_period cost module (cost = runtime mod period).'),
    cfg.Opt(
        'action', type=behaviours.OptionType(), default='delete',
        help='How a victim is interrupted, unless its flavor sets '
             '``opie:interruption_behavior``. Possible values: a '
             'registered interruption behaviour (entry points '
             '``opie_sched.preemption.behaviours``): ``delete`` (at once), '
             '``stop`` (a clean shutdown, then deleted after '
             '``stop_grace_period`` seconds, re-checked just before: a '
             'stopped server keeps its Placement allocation, so only the '
             'delete frees the host), ``shelve`` (shelved and offloaded: '
             'it stays in its project as SHELVED_OFFLOADED and its host '
             'is freed; needs an image snapshot per image-backed victim; '
             'deleted instead when Nova refuses to shelve it: rescued, '
             'ERROR, VERIFY_RESIZE, soft-deleted).'),
    cfg.IntOpt(
        'stop_grace_period', default=30, min=0,
        help='Seconds a stopped victim is kept before it is deleted, when '
             '``action = stop``.'),
    cfg.FloatOpt(
        'release_timeout', default=120.0, min=0,
        help='Seconds the scheduler holds a normal request while its '
             'victims release the host (as Kubernetes holds a preemptor on '
             'its nominated node). After the timeout the request proceeds '
             'and the reconciler finishes the job.'),
    cfg.FloatOpt(
        'notice_seconds', default=0.0, min=0,
        help='Seconds of notice the guest of a victim gets before its '
             'stop, shelve or delete: the scheduler first writes the '
             'server metadata ``opie:preempt_notice`` and '
             '``opie:preempt_deadline`` (served to the guest in the '
             'metadata service\'s meta_data.json, the market\'s contract), '
             'then waits this long. Bounded by ``release_timeout`` and a '
             'third of ``reservation_timeout``. The '
             'waiting normal request is held this much longer (once '
             'for all its hosts; the reconciler\'s round too), so the '
             'default 0 writes the notice at the moment of the action: '
             'a stop or shelve is a '
             'clean shutdown (nova\'s ``shutdown_timeout``, 60 s by '
             'default), in which the guest can read it. Possible values: '
             '0 (default) - notice at the action, deadline = now; N > 0 - '
             'the notice appears N seconds (within one second: the '
             'deadline is written in whole seconds) before the action, '
             'and every preempting request waits N seconds more.'),
    cfg.Opt(
        'headroom', type=headroom.OptionType(), default='0',
        help='Free room the reconciler keeps in every pool of hosts (each '
             'host aggregate, and the hosts in no aggregate) ahead of '
             'demand: when a pool\'s free room (every instance counted, '
             'those leaving or already under a headroom notice not) falls '
             'below it, the reconciler chooses, with the exact victim '
             'selection of the preemption phase, the cheapest preemptible '
             'servers restoring it (never more), marks them at risk '
             '(server metadata ``opie:rebalance_recommendation``), gives '
             'them ``headroom_notice_seconds`` of notice and interrupts '
             'them at the deadline, or at once when the guest powers '
             'itself off or the owner stops, shelves or deletes it. A '
             'normal request beyond the headroom takes victims at once as '
             'without it (their notice is cut). An aggregate\'s metadata '
             '``opie_headroom`` (same syntax) overrides this value for its '
             'hosts. Possible values: ``0`` (default) - off; a fraction '
             'below 1 (``0.1``) or a percentage (``10%``) of the pool\'s '
             'capacity in every dimension; amounts ``4 vcpu, 8192 MB, 100 '
             'GB`` (any subset, comma-separated; MB is RAM, GB is disk; a '
             'dimension not named is 0), summed over the pool\'s hosts '
             '(crumbs on several hosts count); slots ``N x <amounts>`` '
             '(``1 x 8 vcpu, 16000 MB``) - N free rooms of that size, each '
             'inside one host (what a normal server of that flavor can '
             'use). Refused at start when malformed.'),
    cfg.FloatOpt(
        'headroom_notice_seconds', default=120.0, min=0,
        help='Seconds of notice a victim of the headroom gets (at least '
             '``notice_seconds``); no request waits for it, so it is not '
             'bounded by ``release_timeout``. Default 120, the two '
             'minutes of the public clouds\' spot instances. Used only '
             'where ``headroom`` is set.'),
    cfg.FloatOpt(
        'headroom_rebalance_seconds', default=0.0, min=0,
        help='Seconds between the at-risk mark (rebalance recommendation) '
             'of a headroom victim and its notice. Possible values: 0 '
             '(default) - both at once; N > 0 - the guest reads it is at '
             'risk N seconds before its notice (the interruption comes N '
             '+ ``headroom_notice_seconds`` after the mark).'),
    cfg.FloatOpt(
        'headroom_poll_interval', default=1.0, min=0.05,
        help='Seconds between two checks of the victims under a headroom '
             'notice: one whose guest powered itself off, or whose owner '
             'stopped, shelved or deleted it, is interrupted at the next '
             'check instead of at its deadline (one query per check).'),
    cfg.IntOpt(
        'max_release_waits', default=8, min=0,
        help='Most requests one scheduler worker holds at once while their '
             'victims release the host (each held request keeps one '
             'thread of the worker\'s RPC executor, '
             '``executor_thread_pool_size``, 64 by default, and one '
             'conductor thread, for up to ``release_timeout``). A request '
             'beyond this bound does not wait: its victims are being '
             'terminated, the reconciler finishes the job, and its normal '
             'server may start while they are still leaving (its host\'s '
             'full state is over capacity for that time). Possible '
             'values: 0 - never wait; N > 0 - at most N waits per '
             'worker, so a hung compute full of preemptibles holds at '
             'most N threads and the others keep scheduling.'),
    cfg.StrOpt(
        'moves_preempt', default='resize', choices=[
            ('none', 'Moves never preempt: a cold or live migration, a '
                     'resize and an evacuation are placed only where the '
                     'full state has room (as a preemptible request), and '
                     'a move whose claim leaves its host over capacity '
                     'fails with NoValidHost.'),
            ('resize', 'Resizes and cold migrations may preempt like a '
                       'new server (its owner\'s resize must not fail '
                       'because of preemptible servers); live migrations '
                       'and evacuations as with none. Nova\'s conductor '
                       'asks the scheduler once per resize or cold '
                       'migration, and a reschedule goes only to '
                       'alternates, which never need preemption: at most '
                       'one host\'s victims die per move.'),
            ('evacuate', 'As resize, and evacuations may preempt too. '
                         'Nova\'s conductor asks the scheduler once per '
                         'evacuation and never tries another host, so at '
                         'most one host\'s victims die per evacuation even '
                         'if the rebuild on it fails.'),
            ('all', 'Every move may preempt like a new server. Limits: '
                    'victims are terminated inside select_destinations, '
                    'before the conductor\'s checks of the destination; '
                    'a live migration whose check fails on a host tries '
                    'another one (``migrate_max_retries``, -1 = no limit), '
                    'and victims die on every host tried; a resize that '
                    'fails on its destination is rescheduled to an '
                    'alternate after its victims died.')],
        help='Whether moves of normal servers may preempt. A new server '
             'and an unshelve (its owner starting it again; the conductor '
             'asks once and does not retry elsewhere) always may; a '
             'rebuild never does (it claims nothing).'),
    cfg.FloatOpt(
        'poll_interval', default=0.5, min=0.01,
        help='Longest interval in seconds between checks that victims have '
             'released the host. The first check is at once, the next '
             'ones are spaced by 1/8 of the time waited so far (at least '
             '0.05 s, at most this value), so a victim is seen at most '
             '12.5 % (or 0.05 s) after it went, and a slow one costs few '
             'queries.'),
    cfg.BoolOpt(
        'release_notifications', default=False,
        help='Wake the waits on victims at Nova\'s versioned '
             'notifications (event-driven early release): each scheduler '
             'process listens to ``[notifications] '
             'versioned_notifications_topics`` on nova\'s notification '
             'transport, in a pool of its own '
             '(``opie-scheduler-wakeup.<host>.<pid>``), and a notification '
             'about a victim being waited on (``instance.power_off.end``, '
             '``instance.update``, ``instance.delete.end``, '
             '``instance.shelve.end``, ...) makes the waiter re-read it '
             'from the database at once. Possible values: false (default) '
             '- the waits poll (``poll_interval``, '
             '``headroom_poll_interval``); true - they wake at the events '
             'and poll every ``notification_poll_interval`` as the '
             'fallback; needs nova to send versioned notifications '
             '(``[oslo_messaging_notifications] driver`` messagingv2, '
             '``[notifications] notification_format`` versioned or '
             'both). A listener that cannot start is logged and the waits '
             'poll as when false.'),
    cfg.FloatOpt(
        'notification_poll_interval', default=5.0, min=0.05,
        help='Seconds between the fallback checks of victims under notice '
             'while the notification listener runs '
             '(``release_notifications``): a release whose notification '
             'was lost is seen within this. Not used when the listener '
             'is off.'),
    cfg.StrOpt(
        'coordination_url', default=None,
        help='tooz backend URL for the locks every scheduler worker and '
             'host share: one lock per resource provider around choosing '
             'and reserving victims, and the reconciler\'s leadership. '
             'Possible values: unset (default) - the file driver in '
             '``[oslo_concurrency] lock_path``/opie_sched (else '
             '``$state_path/opie_sched/locks``; never inside a Python '
             'install directory, opie-scheduler refuses to start then), '
             'correct for all workers of ONE scheduler host only: '
             'opie-scheduler refuses to start when a scheduler service of '
             'another host is up; ``etcd3+http://host:2379`` (etcd3gw '
             'package), ``redis://host:6379`` (redis package), '
             '``mysql://user:pass@host/db``, ... - a backend every '
             'scheduler host reaches; required when opie-scheduler runs '
             'on several hosts.'),
    cfg.FloatOpt(
        'reservation_timeout', default=300.0, min=1,
        help='Seconds a victim reserved by a scheduler worker counts as '
             'leaving for the other workers before its request has '
             'terminated it. A live request renews it every third of '
             'this; a reservation older than this was left by a worker '
             'that hung (a dead worker\'s are released at the '
             'reconciler\'s next round, once its liveness lock is free); '
             'the victim becomes an ordinary candidate again.'),
    cfg.IntOpt(
        'retry_interval', default=60, min=1,
        help='Seconds the reconciler waits before terminating again a '
             'victim whose termination did not complete (a failed delete, '
             'a compute service down, a scheduler that died between stop '
             'and delete). The wait doubles after each attempt, up to '
             '``max_retry_interval``.'),
    cfg.IntOpt(
        'max_retry_interval', default=3600, min=1,
        help='Longest wait in seconds between two termination attempts of '
             'one victim. Related options: ``retry_interval``.'),
    cfg.IntOpt(
        'max_attempts', default=5, min=1,
        help='Termination attempts after which a victim that is still not '
             'gone gets an instance fault and an ERROR log line for the '
             'operator at every further attempt.'),
    cfg.IntOpt(
        'max_lifetime', default=0, min=0,
        help='Longest life of a preemptible server in seconds, after which '
             'the reconciler terminates it like a victim (Google\'s '
             'preemptible VMs stop after 24 h: 86400). Possible values: 0 '
             '(default) - no limit; N > 0 - seconds since the server was '
             'launched. A preemptible flavor may set its own limit with '
             'the extra spec ``opie:max_lifetime`` (seconds, 0 = none).'),
    cfg.FloatOpt(
        'preemption_cost_weight_multiplier', default=10.0,
        help='Multiplier of PreemptionCostWeigher. Its weights are already '
             'in [0, 1] with hosts needing no preemption at 1 and hosts '
             'needing it at most 0.5, so a multiplier larger than twice the '
             'sum of the other multipliers makes "no preemption first" '
             'strict. Per-aggregate override: metadata key '
             '``preemption_cost_weight_multiplier``.'),
    cfg.FloatOpt(
        'proportional_share_weight_multiplier', default=1.0,
        help='Multiplier of ProportionalShareWeigher (per-aggregate '
             'override: ``proportional_share_weight_multiplier``).'),
    cfg.StrOpt(
        'default_bid', default='0.01',
        help='Bid (currency per hour) that ProportionalShareWeigher counts '
             'for a preemptible server or request without one of its own '
             '(server metadata or scheduler hint ``opie_bid``, then flavor '
             'extra spec ``opie:bid``). Keep it equal to the default bid of '
             'opie-market.'),
    cfg.FloatOpt(
        'preemptible_count_weight_multiplier', default=1.0,
        help='Multiplier of PreemptibleCountWeigher (per-aggregate override: '
             '``preemptible_count_weight_multiplier``).'),
]

reconciler_group = cfg.OptGroup(
    'opie_reconciler',
    title='Overcommit reconciler',
    help='Restores full state <= capacity on every host by terminating the '
         'cheapest preemptible instances, catching what the scheduler '
         'cannot (a scheduler that died after the claim, racing '
         'preemptible requests, migrations, evacuations, forced hosts).')

reconciler_opts = [
    cfg.BoolOpt(
        'run_in_scheduler', default=True,
        help='Run the reconciler periodically inside opie-scheduler.'),
    cfg.IntOpt(
        'interval', default=60, min=1,
        help='Seconds between reconciler runs (honoured to the second). '
             'Only one reconciler runs per cloud: every scheduler worker '
             'tries to take the reconciler lock on '
             '``[opie_preemption] coordination_url`` and the holder runs.'),
    cfg.BoolOpt(
        'dry_run', default=False,
        help='Log what would be terminated without terminating anything.'),
    cfg.IntOpt(
        'restore_per_round', default=5, min=0,
        help='Most preempted servers the reconciler unshelves per round '
             '(automatic restore: flavors with ``opie:restore=auto`` whose '
             'servers were shelved by the ``shelve`` interruption '
             'behaviour). Each is unshelved only onto free room, never by '
             'preempting anyone nor below a pool\'s headroom; the highest '
             'bid first, then the longest waiting. Possible values: 0 '
             '(no automatic restore: such servers wait, shelved, for '
             'their owners), or a positive number of unshelves per round.'),
]


def register_opts(conf):
    """Register the scheduler-side groups on ``conf`` (nova's CONF).

    Each ConfigOpts gets its own copy of a group: an ``OptGroup`` holds its
    options' overrides, so a shared one would leak ``set_override`` between
    ConfigOpts objects.
    """
    for group, opts in ((preemption_group, preemption_opts),
                        (reconciler_group, reconciler_opts)):
        copy = cfg.OptGroup(group.name, title=group.title, help=group.help)
        conf.register_group(copy)
        conf.register_opts(opts, group=copy)
    rpm_opts.register_opts(conf)


def list_opts():
    return [(preemption_group, preemption_opts),
            (reconciler_group, reconciler_opts)] + rpm_opts.list_opts() \
        + autoscaler_opts.list_opts() + repacker_opts.list_opts() \
        + credentials.list_opts()
