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
"""Consolidation strategies of ``opie-repacker`` (``[opie_repacker]
strategy``).

A strategy turns the collector's hosts (:class:`planner.Host`) into a
:class:`planner.Plan` of :class:`planner.Move`; the service's tooz lock,
migration budget, dry-run and live migration (:mod:`.executor`) apply to
every strategy unchanged. Strategies are stevedore plugins of the
namespace :data:`NAMESPACE`, constructed with the ``cfg.ConfigOpts``:

``rpm``
    :func:`opie_sched.rpm.planner.plan`: RPM triggers and score
    (thesis Paper IV).
``p2p``
    :class:`P2PStrategy`: re-consolidation over a scale-free overlay of
    the hosts (thesis Paper II, §3.3 Alg. 2).
``gossip``
    :class:`GossipStrategy`: pairwise gossip redistribution of 2-D VMs
    (thesis Paper III, Alg. 1-3).
``tabu``
    tabu-search rebalancing (:mod:`opie_sched.services.repacker.tabu`), when
    that
    module is installed.

One service runs the decentralised strategies, but each host only ever
sees what its paper lets it see: its overlay neighbours (p2p) or the
gossip partners of the current cycle (gossip); the overlay and the peer
sampling are explicit, seeded state (:mod:`opie_sched.consolidation
.overlay`), so a plan is reproducible.

:class:`planner.Move` fields for the new strategies: ``score`` is the
strategy's own objective in [0, 1], lower better (p2p: 1 − the
destination's utilisation after the move; gossip: the pair's imbalance
after the move over 2); ``terms`` holds the normalised data transfer
(Paper IV eq. 8-9) and the destination imbalance; the other RPM terms
(risk, distance, efficiency) are not computed by these strategies and
are 0.
"""

import numpy as np

from opie_sched.conf import repacker as opts_mod
from opie_sched.consolidation import gossip
from opie_sched.consolidation import overlay as overlay_mod
from opie_sched.consolidation import p2p
from opie_sched import plugins
from opie_sched.rpm import model as rpm
from opie_sched.rpm import planner

#: stevedore namespace of the strategies.
NAMESPACE = 'opie_sched.repacker.strategies'


class StrategyError(planner.PlanError):
    """Unknown or unloadable strategy, or bad strategy options."""


class Strategy:
    """Base of the strategies: ``Strategy(conf).plan(hosts) -> Plan``.

    :param conf: ``cfg.ConfigOpts`` with :func:`opts.register_opts` done.
    """

    name = None

    def __init__(self, conf):
        self.conf = conf
        self.opts = conf[opts_mod.GROUP]

    def policy(self):
        """The :class:`planner.Policy` of the configuration (thresholds,
        α, budget, migration link).
        """
        return opts_mod.policy(self.conf)

    def plan(self, hosts):
        raise NotImplementedError


class RPMStrategy(Strategy):
    """Thesis Paper IV: :func:`planner.plan` with the configured policy."""

    name = 'rpm'
    description = ('RPM overload/underload triggers and score, draining '
                   'underloaded hosts (thesis Paper IV).')

    def plan(self, hosts):
        return planner.plan(hosts, self.policy())


# -- shared projection -------------------------------------------------------

class _Projection:
    """The hosts' projected state while a plan is built: instances per
    host, used and requested sums, and the fit rule shared by every new
    strategy: an accepting host and :func:`planner.admits` (RPM's rule).
    """

    def __init__(self, hosts, alpha):
        self.hosts = list(hosts)
        self.alpha = alpha
        self.index = {h.name: i for i, h in enumerate(self.hosts)}
        self.placed = [list(h.instances) for h in self.hosts]

    def used(self, i):
        return (sum(x.cpu for x in self.placed[i]),
                sum(x.memory for x in self.placed[i]))

    def requested(self, i):
        return (sum(x.vcpus for x in self.placed[i]),
                sum(x.memory_mb for x in self.placed[i]))

    def utilisation(self, i):
        """``(cpu, mem)`` used fractions of host ``i``."""
        cpu, mem = self.used(i)
        h = self.hosts[i]
        return cpu / h.vcpus, mem / h.memory_mb

    def load(self, i):
        """max(cpu, mem) used fraction: a host's load as one number."""
        return max(self.utilisation(i))

    def fits(self, inst, i):
        h = self.hosts[i]
        return h.accepts and planner.admits(h, self.requested(i),
                                            self.used(i), inst, self.alpha)

    def move(self, inst, source, destination):
        self.placed[source].remove(inst)
        self.placed[destination].append(inst)


def _move(proj, inst, source, destination, reason, score, policy, dt_bound):
    dt = planner.data_transfer(inst, policy)
    cpu, mem = proj.utilisation(destination)
    terms = rpm.Terms(risk=0.0, distance=0.0, efficiency=0.0,
                      data_transfer=rpm.normalise(dt, dt_bound),
                      imbalance=min(1.0, abs(cpu - mem)))
    return planner.Move(server=inst.id, name=inst.name,
                        source=proj.hosts[source].name,
                        destination=proj.hosts[destination].name,
                        reason=reason, score=min(1.0, max(0.0, score)),
                        terms=terms, data_transfer_mb=dt,
                        preemptible=inst.preemptible)


def _check(hosts, policy):
    """Hosts sorted by name, after the planner's input rules.

    :raises planner.PlanError: not a Policy, not Host objects, duplicate
        host names, an instance on two hosts.
    """
    if not isinstance(policy, planner.Policy):
        raise planner.PlanError('policy must be a Policy, got %r'
                                % (policy,))
    hosts = list(hosts)
    names, ids = set(), set()
    for host in hosts:
        if not isinstance(host, planner.Host):
            raise planner.PlanError('hosts must be Host, got %r' % (host,))
        if host.name in names:
            raise planner.PlanError('duplicate host %r' % host.name)
        names.add(host.name)
        for inst in host.instances:
            if inst.id in ids:
                raise planner.PlanError('instance %s is on two hosts'
                                        % inst.id)
            ids.add(inst.id)
    return sorted(hosts, key=lambda h: h.name)


# -- Paper II ----------------------------------------------------------------

class P2PStrategy(Strategy):
    """Thesis Paper II §3.3, Alg. 2 on the compute hosts.

    The hosts (sorted by name) are the peers of a Barabási-Albert overlay
    (``p2p_attachment`` links per new peer, seeded by ``consolidation_seed``
    -- the overlay is the same every period while the hosts are). A host
    whose load (the larger of its used CPU and RAM fractions) is at most
    ``p2p_threshold`` (Paper II §4: 40 %) sends one request per server,
    largest first, that walks the overlay neighbour to neighbour by the
    Most-utilised heuristic, at most ``p2p_htl`` hops (Alg. 1, §4:
    HTL = 20), to a host more loaded than itself where the server fits
    (:func:`planner.fits`' rule). Hosts act in a seeded random order;
    each found server is a move (reason ``underload``); a host whose
    servers all move is emptied. At most ``max_migrations`` moves.
    """

    name = 'p2p'
    description = ('Re-consolidation over a scale-free overlay of the '
                   'hosts (thesis Paper II).')

    def plan(self, hosts, policy=None):
        policy = policy or self.policy()
        hosts = _check(hosts, policy)
        budget = policy.max_migrations
        moves, triggers, skipped = [], {}, {}
        if len(hosts) < 2:
            return planner.Plan(moves, triggers, skipped, budget)
        proj = _Projection(hosts, policy.alpha)
        n = len(hosts)
        net = overlay_mod.ScaleFreeOverlay(
            n, min(self.opts.p2p_attachment, n - 1),
            seed=self.opts.consolidation_seed)
        rng = np.random.default_rng(self.opts.consolidation_seed)
        dt_bound = planner.data_transfer_upper_bound(hosts, policy)
        view = _LoadView(proj)
        moved = set()
        for node in rng.permutation(n):
            node = int(node)
            load = proj.load(node)
            if not proj.placed[node] or load > self.opts.p2p_threshold:
                continue
            triggers[hosts[node].name] = planner.UNDERLOAD
            insts = sorted((x for x in proj.placed[node]
                            if x.movable and x.id not in moved),
                           key=lambda x: (-max(x.cpu / hosts[node].vcpus,
                                               x.memory / hosts[node]
                                               .memory_mb), x.id))
            stuck = len(proj.placed[node]) - len(insts)
            for inst in insts:
                if len(moves) >= budget:
                    break
                src_load = proj.load(node)

                def eligible(cands, inst=inst, node=node,
                             src_load=src_load):
                    return np.array([c != node
                                     and proj.load(int(c)) > src_load + 1e-9
                                     and proj.fits(inst, int(c))
                                     for c in cands], dtype=bool)

                view.refresh()
                walk = p2p.allocate(view, net, 'max', 0.0, node, rng,
                                    htl=self.opts.p2p_htl,
                                    eligible=eligible)
                if walk.node is None or walk.node == node:
                    stuck += 1
                    continue
                proj.move(inst, node, walk.node)
                moved.add(inst.id)
                moves.append(_move(proj, inst, node, walk.node,
                                   planner.UNDERLOAD,
                                   1.0 - proj.load(walk.node), policy,
                                   dt_bound))
            if stuck:
                skipped[hosts[node].name] = (
                    '%d server(s) found no more loaded host within %d hops'
                    % (stuck, self.opts.p2p_htl))
        return planner.Plan(moves, triggers, skipped, budget - len(moves))


class _LoadView:
    """The 1-D view :func:`p2p.allocate` reads: ``used`` = each host's load
    over a capacity of 1 (the walk's own fit test is done by ``eligible``
    with the 2-D rule).
    """

    capacity = 1.0

    def __init__(self, proj):
        self.proj = proj
        self.refresh()

    def refresh(self):
        self.used = np.array([min(1.0, self.proj.load(i))
                              for i in range(len(self.proj.hosts))])


# -- Paper III ---------------------------------------------------------------

class GossipStrategy(Strategy):
    """Thesis Paper III on the compute hosts.

    Each host is a peer that, every cycle, gets ``gossip_view_size``
    random partners from a seeded peer sampling service and applies the
    decision function of ``gossip_strategy`` with each (Alg. 1-2: Merge,
    Merge+Imb -- Gain = ΔImb / migration cost --, or Incremental), an
    overloaded host offloading first (Alg. 3). Utilisations are fractions
    of the smallest host's CPU and RAM (the paper assumes homogeneous
    PMs; this keeps its α test safe on larger hosts). After convergence
    (or ``gossip_max_cycles``) the reconfiguration plan (§3.5) moves each
    server from where it runs to where the protocol put it, in an order
    in which every move fits when it runs (:func:`planner.fits`' rule
    with real capacities); moves that never fit are skipped and
    reported. At most ``max_migrations`` moves.
    """

    name = 'gossip'
    description = ('Pairwise gossip redistribution of CPU and memory '
                   '(thesis Paper III).')

    def plan(self, hosts, policy=None):
        policy = policy or self.policy()
        hosts = _check(hosts, policy)
        budget = policy.max_migrations
        if len(hosts) < 2:
            return planner.Plan([], {}, {}, budget)
        proj = _Projection(hosts, policy.alpha)
        cap_cpu = min(h.vcpus for h in hosts)
        cap_mem = min(h.memory_mb for h in hosts)
        insts, where = [], []
        for i, h in enumerate(hosts):
            for x in h.instances:
                insts.append(x)
                where.append(i)
        n = len(hosts)
        sampling = overlay_mod.PeerSampling(
            n, self.opts.gossip_view_size,
            seed=self.opts.consolidation_seed)
        proto = gossip.Gossip(
            n, [x.cpu / cap_cpu for x in insts],
            [x.memory / cap_mem for x in insts],
            [x.memory_mb / 1024.0 for x in insts],
            np.array(where, dtype=np.int64), sampling,
            strategy=self.opts.gossip_strategy, alpha=policy.alpha,
            movable=[x.movable for x in insts],
            receives=[h.accepts for h in hosts],
            rng=np.random.default_rng(self.opts.consolidation_seed))
        overloaded = {hosts[i].name for i in range(n) if proto.overloaded(i)}
        proto.converge(self.opts.gossip_max_cycles)
        reasons = {}
        for step in proto.log:
            for vm in step.vms:
                reasons[vm] = step.reason
        pending = proto.plan()
        dt_bound = planner.data_transfer_upper_bound(hosts, policy)
        moves, triggers, skipped = [], {}, {}
        progress = True
        while pending and progress and len(moves) < budget:
            progress = False
            for item in list(pending):
                if len(moves) >= budget:
                    break
                vm, src, dst = item
                inst = insts[vm]
                if not proj.fits(inst, dst):
                    continue
                proj.move(inst, src, dst)
                pending.remove(item)
                progress = True
                cpu, mem = proj.utilisation(dst)
                scpu, smem = proj.utilisation(src)
                reason = (planner.OVERLOAD if hosts[src].name in overloaded
                          else reasons.get(vm, planner.UNDERLOAD))
                triggers.setdefault(hosts[src].name, reason)
                moves.append(_move(proj, inst, src, dst, reason,
                                   (abs(cpu - mem) + abs(scpu - smem)) / 2,
                                   policy, dt_bound))
        for vm, src, dst in pending:
            skipped.setdefault(hosts[src].name, (
                '%s to %s does not fit yet (or over the budget)'
                % (insts[vm].id, hosts[dst].name)))
        return planner.Plan(moves, triggers, skipped, budget - len(moves))


class TabuStrategy(Strategy):
    """Themis / Merkat tabu-search rebalancing
    (:class:`opie_sched.services.repacker.tabu.TabuRebalanceStrategy`):
    preemptible
    servers migrate to reduce the spot market's allocation error. The bids
    come from the market API (``GET /v1/shares``, service type
    ``spot-market`` in the catalog of the service's connection, at its
    interface(s) and region: ``[service_credentials]``, else
    ``[opie_repacker] cloud``).
    """

    name = 'tabu'
    description = ('Tabu-search rebalancing of preemptible servers toward '
                   'the spot market\'s shares (Themis / Merkat).')

    def __init__(self, conf, bids=None):
        super().__init__(conf)
        self._bids = bids

    def _market_bids(self):
        if self._bids is None:
            from opie_sched.common import credentials
            from opie_sched.services.market import client as market_client
            from opie_sched.services.repacker import tabu
            conn = credentials.connect(self.conf, cloud=self.opts.cloud)
            # the catalog's spot-market endpoint at the connection's
            # interface(s) and region, looked up by the client
            self._bids = tabu.MarketBids(
                conn.session, **market_client.connection_catalog(conn))
        return self._bids

    def plan(self, hosts):
        from opie_sched.services.repacker import tabu
        return tabu.TabuRebalanceStrategy(
            bids=self._market_bids(), conf=self.conf,
            policy=self.policy()).plan(hosts)


# -- loading -----------------------------------------------------------------

def load(conf, name=None):
    """The strategy ``name`` (default ``[opie_repacker] strategy``),
    constructed with ``conf``.

    :raises StrategyError: unknown name or a plugin failing to load (the
        message of :class:`opie_sched.plugins.PluginError`, which
        is its ``__cause__``).
    """
    name = name or conf[opts_mod.GROUP].strategy
    try:
        return plugins.load(NAMESPACE, name, kind='repacker strategy',
                            args=(conf,))
    except plugins.PluginError as exc:
        raise StrategyError(str(exc)) from exc


def names():
    """Sorted names of the installed strategies."""
    return plugins.names(NAMESPACE)
