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
"""Transitions, reconfiguration cost and the gain test (Paper V, 3.2-3.4).

A running set of price ``P`` is replaced by an optimal set of price
``P_hat`` only when (Paper V, eq. 1 and Algorithm 1)::

    P_hat < P   and   1 - (P_hat * d + R) / (P * d) > K

with ``d`` the expected stability interval (hours), ``R = C_extra *
repacking time`` the reconfiguration cost (currency; Paper V, 3.3) and
``K`` the gain threshold (Paper V uses ``K = 1%``). Transitions are
make-before-break (Paper V, 3.2).
"""

from opie_sched.flavormix.vmtypes import _Catalog
from opie_sched.flavormix.vmtypes import _exact


def transition(current, target):
    """Make-before-break plan from ``current`` to ``target`` (Paper V, 3.2).

    Running servers are reused where the target has their flavor.

    :param current: ``{flavor: count}``.
    :param target: ``{flavor: count}``.
    :returns: ``(keep, start, stop)``, each ``{flavor: count}``: start
        ``start`` first, then stop ``stop``; ``keep`` runs throughout.
    """
    names = sorted(set(current or {}) | set(target or {}))
    keep, start, stop = {}, {}, {}
    for n in names:
        c, t = (current or {}).get(n, 0), (target or {}).get(n, 0)
        for d, v in ((keep, min(c, t)), (start, t - min(c, t)),
                     (stop, c - min(c, t))):
            if v:
                d[n] = v
    return keep, start, stop


def reconfiguration_cost(types, start, repack_time, c_extra=None):
    """``R = C_extra * repacking time`` (Paper V, 3.3), currency.

    :param start: the servers started by the transition ``{flavor: n}``.
    :param repack_time: hours, >= 0.
    :param c_extra: currency per hour, >= 0; default the price per hour of
        the servers started (make-before-break: they run beside the old set
        for the repacking time). When nothing is started (only stops), the
        default is 0.
    :returns: float.
    :raises RepackingError: bad input.
    """
    return float(_reconfig(_Catalog(types), start, repack_time, c_extra))


def _reconfig(cat, start, repack_time, c_extra):
    t = _exact(repack_time, 'repacking time')
    if c_extra is None:
        extra = cat.price_of(cat.vector(start, 'started servers'))
    else:
        extra = _exact(c_extra, 'C_extra')
    return extra * t


def gain(current_price, new_price, d, reconfig_cost):
    """``1 - (P_hat*d + R) / (P*d)`` (Paper V, eq. 1), float.

    :raises RepackingError: ``P`` or ``d`` not positive, or bad numbers.
    """
    return float(_gain(_exact(current_price, 'P', positive=True),
                       _exact(new_price, 'P_hat'),
                       _exact(d, 'd', positive=True),
                       _exact(reconfig_cost, 'R')))


def _gain(P, P_hat, d, R):
    return 1 - (P_hat * d + R) / (P * d)


def decide(current_price, new_price, d, reconfig_cost, K):
    """Paper V, Algorithm 1: reconfigure or not; ``(bool, gain, reason)``.

    Reconfigure iff ``P_hat < P`` and ``1 - (P_hat*d + R)/(P*d) > K``
    (strictly), decided in exact arithmetic on the values given.

    :param current_price: ``P``, currency per hour, >= 0.
    :param new_price: ``P_hat``, currency per hour, >= 0.
    :param d: stability interval, hours, > 0.
    :param reconfig_cost: ``R``, currency, >= 0.
    :param K: gain threshold (fraction, e.g. 0.01), >= 0.
    :returns: ``(reconfigure, gain or None, reason)``; gain is None when
        ``P_hat >= P`` (Algorithm 1 stops there).
    :raises RepackingError: bad input.
    """
    return _decide(_exact(current_price, 'P'), _exact(new_price, 'P_hat'),
                   _exact(d, 'd', positive=True),
                   _exact(reconfig_cost, 'R'), _exact(K, 'K'))


def _decide(P, P_hat, d, R, K):
    if P_hat >= P:
        return False, None, ('keep: the optimal set (%g/h) is not cheaper '
                             'than the current one (%g/h)' % (P_hat, P))
    g = _gain(P, P_hat, d, R)
    if g > K:
        return True, float(g), (
            'repack: gain %.6g > K=%g (P=%g/h, P_hat=%g/h, d=%gh, R=%g)'
            % (g, K, P, P_hat, d, R))
    return False, float(g), (
        'keep: gain %.6g <= K=%g (P=%g/h, P_hat=%g/h, d=%gh, R=%g)'
        % (g, K, P, P_hat, d, R))
