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
"""Gossip-based pairwise VM redistribution of 2-D (CPU, memory) VMs.

Source: Sedaghat, Hernández, Elmroth and Girdzijauskas, "Divide the Task,
Multiply the Outcome: Cooperative VM Consolidation" (CloudCom 2014; thesis
Paper III).

* §2 eq. 3: P_i = (P_max − P_idle) × c_i + P_idle; eq. 4/9: the imbalance
  Imb_dc = Σ_i |c_i − m_i| / n; eq. 10: utilisation of the active PMs.
* §3.1: each peer knows only its current view of k random neighbours
  (:class:`opie_sched.consolidation.overlay.PeerSampling`).
* §3.4, Alg. 1: every cycle each peer exchanges its state with each
  neighbour of its view and both apply the decision function; the
  decisions change a *virtual* VM-to-PM mapping, and when a cycle changes
  nothing the protocol has converged and the reconfiguration plan (§3.5)
  migrates each VM from where it runs to where the mapping put it.
* Alg. 2, the decision function for a pair (me, k): an overloaded peer
  offloads (Alg. 3); if the pair's CPU and memory fit in one PM under
  α (eq. 2, §4.2: α = 0.9) the VMs of one peer go to the other (**Merge**);
  else, if the pair's CPU *and* memory sums are at least one PM's
  capacity (Alg. 2's third branch, c_me + c_k ≥ C_PM & m_me + m_k ≥
  M_PM; eq. 6's φ = 1: both dimensions over), (**Merge+Imb**) the pair
  picks the redistribution of its VMs with the largest Gain =
  (Imb(S1, S2) − Imb(S1', S2')) / migration cost (eq. 5-8),
  the cost being the memory moved (eq. 7: the iterative memory transfer
  dominates the migration time).
* §3.3 **Incremental** (threshold) release: a peer below a utilisation
  threshold moves one VM at a time to a more loaded partner.
* §3.6, Alg. 3 **Offload**: an overloaded peer moves the subset of its VMs
  of least memory that brings it under the bar to an active neighbour of
  its view that can take it, else to an idle neighbour it wakes up.

Utilisations and VM demands are **fractions of one PM's capacity**
(homogeneous PMs); memory sizes for the migration cost in GB. The
interpretations where the paper is silent or inconsistent are marked
"(ours)".
"""

import dataclasses
import itertools

import numpy as np

#: Paper III §4.2: utilisation factor α, also the overload bar.
ALPHA = 0.9
#: Paper III §4.2: PM power, W.
P_IDLE, P_MAX = 175.0, 250.0
#: Strategies of §3.3 / §4.
RANDOM, INCREMENTAL, MERGE, MERGE_IMB = ('random', 'incremental', 'merge',
                                         'merge-imb')
STRATEGIES = (RANDOM, INCREMENTAL, MERGE, MERGE_IMB)
#: Incremental release threshold (ours: Paper III gives none; Paper IV's
#: underload threshold, 30 %).
INCREMENTAL_THRESHOLD = 0.3
#: Largest VM subset Offload examines (ours: Alg. 3 is exhaustive).
OFFLOAD_SUBSET = 3
#: A redistribution must lower the pair's imbalance by more than this.
MIN_IMPROVEMENT = 1e-6
#: When Merge+Imb redistributes a pair that cannot merge: Alg. 2's third
#: branch, both the CPU and the memory sums at least C_PM (= 1), the
#: paper's reading; or whenever the pair cannot merge under α in either
#: dimension (our earlier reading, kept to show both).
TRIGGER_BOTH_FULL, TRIGGER_NO_MERGE = ('both-full', 'no-merge')
TRIGGERS = (TRIGGER_BOTH_FULL, TRIGGER_NO_MERGE)


class GossipError(ValueError):
    """Bad input to the gossip protocol (message names the value)."""


def imbalance(cpu, mem):
    """Σ |c_i − m_i| of some PMs (eq. 5 without φ), fractions."""
    return float(np.sum(np.abs(np.asarray(cpu) - np.asarray(mem))))


def power(cpu):
    """Eq. 3: W of active PMs at CPU utilisation ``cpu`` (array)."""
    return (P_MAX - P_IDLE) * np.asarray(cpu) + P_IDLE


@dataclasses.dataclass
class Interaction:
    """One accepted decision: ``vms`` moved from ``source`` to
    ``destination`` in the virtual mapping, for ``reason`` ('merge',
    'imbalance', 'incremental', 'offload').
    """

    source: int
    destination: int
    vms: tuple
    reason: str


class Gossip:
    """The protocol's explicit state over ``n`` PMs.

    :param n: number of PMs. :param cpu: per-VM CPU demand (fractions of
        a PM), array indexed by VM id. :param mem: per-VM memory demand,
        fractions. :param mem_gb: per-VM memory size, GB (migration cost).
    :param host: per-VM PM index where it runs now (-1: not placed).
    :param sampling: a :class:`~opie_sched.consolidation.overlay
        .PeerSampling` over the ``n`` PMs.
    :param strategy: one of :data:`STRATEGIES`.
    :param alpha: the utilisation factor / overload bar.
    :param movable: optional bool array; False VMs stay where they are.
    :param receives: optional bool array per PM; False PMs receive no VM
        (disabled hosts) but may give theirs away.
    :param rng: numpy Generator (peer order each cycle).
    :param trigger: when Merge+Imb redistributes a pair, one of
        :data:`TRIGGERS` (default Alg. 2's :data:`TRIGGER_BOTH_FULL`).
    :raises GossipError: bad strategy, trigger, shapes or α.

    ``assign`` is the virtual mapping the cycles change; ``host`` stays
    the real placement until :meth:`plan` is applied by the caller.
    """

    def __init__(self, n, cpu, mem, mem_gb, host, sampling,
                 strategy=MERGE_IMB, alpha=ALPHA, movable=None, rng=None,
                 incremental_threshold=INCREMENTAL_THRESHOLD, receives=None,
                 trigger=TRIGGER_BOTH_FULL):
        if strategy not in STRATEGIES:
            raise GossipError('unknown strategy %r (known: %s)'
                              % (strategy, ', '.join(STRATEGIES)))
        if trigger not in TRIGGERS:
            raise GossipError('unknown trigger %r (known: %s)'
                              % (trigger, ', '.join(TRIGGERS)))
        self.trigger = trigger
        if not 0 < alpha <= 1:
            raise GossipError('alpha must be in (0, 1], got %r' % (alpha,))
        self.cpu = np.asarray(cpu, dtype=float)
        self.mem = np.asarray(mem, dtype=float)
        self.mem_gb = np.asarray(mem_gb, dtype=float)
        self.host = np.asarray(host, dtype=np.int64).copy()
        if not (self.cpu.shape == self.mem.shape == self.mem_gb.shape
                == self.host.shape):
            raise GossipError('cpu, mem, mem_gb and host must have one '
                              'entry per VM')
        if np.any(self.host >= n):
            raise GossipError('a VM is on a PM >= n=%d' % n)
        if sampling.n != n:
            raise GossipError('peer sampling covers %d peers, not %d'
                              % (sampling.n, n))
        self.n = n
        self.sampling = sampling
        self.strategy = strategy
        self.alpha = alpha
        self.threshold = incremental_threshold
        self.movable = (np.ones(len(self.cpu), dtype=bool) if movable is None
                        else np.asarray(movable, dtype=bool))
        self.receives = (np.ones(n, dtype=bool) if receives is None
                         else np.asarray(receives, dtype=bool))
        self.rng = rng if rng is not None else np.random.default_rng(0)
        self.reset()

    # -- state ------------------------------------------------------------

    def reset(self):
        """Start a decision round from the real placement."""
        self.assign = self.host.copy()
        self.vms = [[] for _ in range(self.n)]
        for vm, pm in enumerate(self.assign):
            if pm >= 0:
                self.vms[pm].append(vm)
        self.c = np.zeros(self.n)
        self.m = np.zeros(self.n)
        placed = self.assign >= 0
        np.add.at(self.c, self.assign[placed], self.cpu[placed])
        np.add.at(self.m, self.assign[placed], self.mem[placed])
        self.log = []

    def active(self):
        """Bool array of PMs hosting a VM in the virtual mapping."""
        return np.array([bool(v) for v in self.vms])

    def overloaded(self, pm):
        return self.c[pm] > self.alpha + 1e-9 or self.m[pm] > self.alpha \
            + 1e-9

    def _move(self, vms, source, destination, reason):
        for vm in vms:
            self.vms[source].remove(vm)
            self.vms[destination].append(vm)
            self.assign[vm] = destination
        c = float(self.cpu[list(vms)].sum())
        m = float(self.mem[list(vms)].sum())
        self.c[source] -= c
        self.m[source] -= m
        self.c[destination] += c
        self.m[destination] += m
        if not self.vms[source]:
            self.c[source] = self.m[source] = 0.0
        self.log.append(Interaction(source, destination, tuple(vms), reason))

    def _movable(self, pm):
        return [vm for vm in self.vms[pm] if self.movable[vm]]

    # -- Alg. 2 ---------------------------------------------------------------

    def decide(self, me, k):
        """The decision function for the pair ``(me, k)``; True when it
        changed the mapping. ``k`` must be in ``me``'s current view.

        :raises GossipError: ``k`` is not in the view.
        """
        if not self.sampling.in_view(me, k):
            raise GossipError('peer %d is not in the view of %d' % (k, me))
        if self.strategy == RANDOM or not self.vms[me] or not self.vms[k]:
            return False
        if self.strategy == INCREMENTAL:
            return self._incremental(me, k)
        a = self.alpha
        if (self.c[me] + self.c[k] <= a + 1e-9
                and self.m[me] + self.m[k] <= a + 1e-9):
            return self._merge(me, k)
        if self.strategy != MERGE_IMB:
            return False
        if self.trigger == TRIGGER_BOTH_FULL and not (
                self.c[me] + self.c[k] >= 1.0 - 1e-9
                and self.m[me] + self.m[k] >= 1.0 - 1e-9):
            return False
        return self._redistribute(me, k)

    def _merge_direction(self, me, k):
        """``(src, dst)``: the peer to empty first, the one to receive.

        The peer whose VMs cost less memory to move is emptied (ours:
        the cheaper direction, eq. 7-8; Alg. 2 as printed empties the
        peer of *more* memory). :meth:`_merge` tries the other way when
        this one cannot be done.
        """
        return (me, k) if self.m[me] <= self.m[k] else (k, me)

    def _merge(self, me, k):
        src, dst = self._merge_direction(me, k)
        if (len(self._movable(src)) != len(self.vms[src])
                or not self.receives[dst]):
            src, dst = dst, src
            if (len(self._movable(src)) != len(self.vms[src])
                    or not self.receives[dst]):
                return False
        self._move(list(self.vms[src]), src, dst, 'merge')
        return True

    def _redistribute(self, me, k):
        """Eq. 5-8: among single moves either way and one-for-one swaps
        (ours: a bounded neighbourhood of the pair's 2-D bin packing), the
        feasible redistribution of largest Gain.
        """
        a = self.alpha
        c1, m1, c2, m2 = self.c[me], self.m[me], self.c[k], self.m[k]
        before = abs(c1 - m1) + abs(c2 - m2)
        A = np.array(self._movable(me) if self.receives[k] else [],
                     dtype=np.int64)
        B = np.array(self._movable(k) if self.receives[me] else [],
                     dtype=np.int64)
        best, best_gain = None, 0.0
        options = []
        # (moved to k from me: dc, dm), (moved to me from k), cost, sets
        if len(A):
            options.append((self.cpu[A], self.mem[A], 0.0, 0.0,
                            self.mem_gb[A], [(int(v),) for v in A], []))
        if len(B):
            options.append((0.0, 0.0, self.cpu[B], self.mem[B],
                            self.mem_gb[B], [], [(int(v),) for v in B]))
        for dca, dma, dcb, dmb, cost, to_k, to_me in options:
            n1 = c1 - dca + dcb
            nm1 = m1 - dma + dmb
            n2 = c2 + dca - dcb
            nm2 = m2 + dma - dmb
            ok = (n1 <= a + 1e-9) & (nm1 <= a + 1e-9) & (n2 <= a + 1e-9) \
                & (nm2 <= a + 1e-9)
            gain = (before - (np.abs(n1 - nm1) + np.abs(n2 - nm2))) / \
                np.maximum(cost, 1e-6)
            delta = before - (np.abs(n1 - nm1) + np.abs(n2 - nm2))
            gain = np.where(ok & (delta > MIN_IMPROVEMENT), gain, -1.0)
            i = int(np.argmax(gain))
            if gain[i] > best_gain:
                best_gain = float(gain[i])
                best = (to_k[i] if to_k else (), to_me[i] if to_me else ())
        if len(A) and len(B) and self.receives[me] and self.receives[k]:
            ca, ma = self.cpu[A][:, None], self.mem[A][:, None]
            cb, mb = self.cpu[B][None, :], self.mem[B][None, :]
            n1, nm1 = c1 - ca + cb, m1 - ma + mb
            n2, nm2 = c2 + ca - cb, m2 + ma - mb
            ok = (n1 <= a + 1e-9) & (nm1 <= a + 1e-9) & (n2 <= a + 1e-9) \
                & (nm2 <= a + 1e-9)
            delta = before - (np.abs(n1 - nm1) + np.abs(n2 - nm2))
            cost = self.mem_gb[A][:, None] + self.mem_gb[B][None, :]
            gain = np.where(ok & (delta > MIN_IMPROVEMENT),
                            delta / np.maximum(cost, 1e-6), -1.0)
            i, j = np.unravel_index(int(np.argmax(gain)), gain.shape)
            if gain[i, j] > best_gain:
                best_gain = float(gain[i, j])
                best = ((int(A[i]),), (int(B[j]),))
        if best is None:
            return False
        to_k, to_me = best
        if to_k:
            self._move(list(to_k), me, k, 'imbalance')
        if to_me:
            self._move(list(to_me), k, me, 'imbalance')
        return True

    def _incremental(self, me, k):
        """§3.3 incremental release: if ``me`` is below the threshold (CPU
        and memory) and ``k`` is more loaded, the largest of ``me``'s VMs
        that ``k`` can take under α moves (one per interaction).
        """
        for src, dst in ((me, k), (k, me)):
            load_s = max(self.c[src], self.m[src])
            if (not self.receives[dst] or load_s >= self.threshold
                    or load_s >= max(self.c[dst], self.m[dst])):
                continue
            for vm in sorted(self._movable(src),
                             key=lambda v: -max(self.cpu[v], self.mem[v])):
                if (self.c[dst] + self.cpu[vm] <= self.alpha + 1e-9
                        and self.m[dst] + self.mem[vm] <= self.alpha + 1e-9):
                    self._move([vm], src, dst, 'incremental')
                    return True
        return False

    # -- Alg. 3 ---------------------------------------------------------------

    def offload(self, me):
        """Alg. 3 for an overloaded ``me`` over its current view; True when
        the overload was resolved in the mapping (else it waits for the
        next cycle's view).
        """
        if not self.overloaded(me):
            return False
        bar = self.alpha
        vms = self._movable(me)
        subsets = [s for r in range(1, min(OFFLOAD_SUBSET, len(vms)) + 1)
                   for s in itertools.combinations(vms, r)]
        if not subsets:
            return False
        sc = np.array([self.cpu[list(s)].sum() for s in subsets])
        sm = np.array([self.mem[list(s)].sum() for s in subsets])
        sg = np.array([self.mem_gb[list(s)].sum() for s in subsets])
        relieves = ((self.c[me] - sc <= bar + 1e-9)
                    & (self.m[me] - sm <= bar + 1e-9))
        view = self.sampling.view(me)
        idle = [int(k) for k in view
                if not self.vms[k] and self.receives[k]]
        for k in view:
            k = int(k)
            if (not self.vms[k] or self.overloaded(k)
                    or not self.receives[k]):
                continue
            # the receiver stays under the bar too (ours: Alg. 3 checks
            # its raw free capacity, which can overload it in turn)
            fit = (relieves & (self.c[k] + sc <= bar + 1e-9)
                   & (self.m[k] + sm <= bar + 1e-9))
            if fit.any():
                i = int(np.argmin(np.where(fit, sg, np.inf)))
                self._move(list(subsets[i]), me, k, 'offload')
                return True
        if idle:
            fit = relieves & (sc <= bar + 1e-9) & (sm <= bar + 1e-9)
            if fit.any():
                i = int(np.argmin(np.where(fit, sg, np.inf)))
                self._move(list(subsets[i]), me, idle[0], 'offload')
                return True
        return False

    # -- Alg. 1 ---------------------------------------------------------------

    def cycle(self):
        """One gossip cycle (new views, then every peer in random order
        offloads if overloaded and meets each neighbour of its view);
        the number of accepted decisions.
        """
        self.sampling.next_cycle()
        changes = 0
        for me in self.rng.permutation(self.n):
            me = int(me)
            if self.overloaded(me):
                changes += int(self.offload(me))
                continue
            for k in self.sampling.view(me):
                k = int(k)
                if self.overloaded(k):
                    continue
                changes += int(self.decide(me, k))
        return changes

    def converge(self, max_cycles=20, on_cycle=None):
        """Cycles until one changes nothing (or ``max_cycles``); the
        number of cycles run. ``on_cycle(cycle_number, self)`` after
        each.
        """
        for n in range(1, max_cycles + 1):
            changed = self.cycle()
            if on_cycle is not None:
                on_cycle(n, self)
            if not changed:
                return n
        return max_cycles

    def plan(self):
        """§3.5 reconfiguration plan: ``[(vm, source, destination)]`` for
        every VM whose mapped PM differs from where it runs.
        """
        moved = np.nonzero((self.assign != self.host) & (self.host >= 0))[0]
        return [(int(v), int(self.host[v]), int(self.assign[v]))
                for v in moved]

    def apply(self):
        """Make the mapping the real placement (the plan executed)."""
        self.host = self.assign.copy()


def metrics(n, cpu_used, mem_used):
    """Eq. 3, 9, 10 of a placement: dict with ``active`` PMs, ``cpu`` and
    ``mem`` mean utilisation of the active PMs, ``imbalance`` (eq. 9, over
    all n PMs), ``power`` (W, active PMs only: idle ones sleep).
    """
    cpu_used = np.asarray(cpu_used)
    mem_used = np.asarray(mem_used)
    active = (cpu_used > 1e-9) | (mem_used > 1e-9)
    na = int(active.sum())
    return {'active': na,
            'cpu': float(cpu_used[active].mean()) if na else 0.0,
            'mem': float(mem_used[active].mean()) if na else 0.0,
            'imbalance': float(np.abs(cpu_used - mem_used).sum() / n),
            'power': float(power(cpu_used[active]).sum())}
