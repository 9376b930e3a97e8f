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
"""VM types (flavors), VM sets and exact numbers of the repacking planner.

Thesis Paper V, section 3: a VM type ``i`` has a price ``p_i`` (currency
per hour) and an application capacity ``c_i`` (any unit, the demand's); a
*VM set* is a mapping ``{flavor name: count}``. Every number is taken as
an exact :class:`fractions.Fraction` (a float at its exact binary value),
so the planner's boundaries are decided exactly.
"""

import dataclasses
import fractions
import math
import numbers

Fraction = fractions.Fraction


class RepackingError(ValueError):
    """Invalid input to the repacking planner (message says which value)."""


# -- numbers ------------------------------------------------------------------

def _exact(value, what, positive=False):
    """``value`` as an exact Fraction; finite and >= 0 (> 0 if positive)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise RepackingError('%s must be a number, got %r' % (what, value))
    if isinstance(value, numbers.Rational):
        exact = Fraction(int(value.numerator), int(value.denominator))
    else:
        value = float(value)
        if not math.isfinite(value):
            raise RepackingError('%s must be finite, got %r' % (what, value))
        exact = Fraction(value)
    if exact < 0 or (positive and exact == 0):
        raise RepackingError('%s must be %s, got %r' % (
            what, 'positive' if positive else 'non-negative', value))
    return exact


def _lcm_den(values):
    den = 1
    for v in values:
        den = den * v.denominator // math.gcd(den, v.denominator)
    return den


# -- VM types and sets --------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class VMType:
    """A VM type (flavor) as the repacking planner sees it (Paper V, 3).

    :param name: flavor name, a non-empty str.
    :param price: ``p_i``, currency per hour, a finite number > 0.
    :param capacity: ``c_i``, application capacity of one server (any unit,
        the same as the demand), a finite number > 0.
    :raises RepackingError: on any other value.
    """

    name: str
    price: float
    capacity: float

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise RepackingError('VM type name must be a non-empty string, '
                                 'got %r' % (self.name,))
        _exact(self.price, 'price of %s' % self.name, positive=True)
        _exact(self.capacity, 'capacity of %s' % self.name, positive=True)


def vm_types(spec):
    """Validated VM types, sorted by name.

    :param spec: an iterable of :class:`VMType` or of dicts ``{"name",
        "price", "capacity"}``, or a dict ``{name: {"price", "capacity"}}``.
    :returns: tuple of :class:`VMType`, sorted by name.
    :raises RepackingError: empty, duplicate names, missing/extra keys or
        bad values.
    """
    if isinstance(spec, dict):
        items = []
        for name, entry in spec.items():
            if not isinstance(entry, dict):
                raise RepackingError('VM type %r must be an object with '
                                     'price and capacity' % (name,))
            items.append(dict(entry, name=name))
        spec = items
    if isinstance(spec, (str, bytes)) or not hasattr(spec, '__iter__'):
        raise RepackingError('VM types must be a list or an object, got %r'
                             % (spec,))
    out = []
    for entry in spec:
        if isinstance(entry, VMType):
            out.append(entry)
            continue
        if not isinstance(entry, dict):
            raise RepackingError('VM type must be an object, got %r'
                                 % (entry,))
        missing = {'name', 'price', 'capacity'} - set(entry)
        extra = set(entry) - {'name', 'price', 'capacity'}
        if missing or extra:
            raise RepackingError('VM type %r: %s' % (
                entry.get('name'), '; '.join(
                    filter(None, [
                        missing and 'missing ' + ', '.join(sorted(missing)),
                        extra and 'unknown ' + ', '.join(sorted(extra))]))))
        out.append(VMType(entry['name'], entry['price'], entry['capacity']))
    if not out:
        raise RepackingError('at least one VM type is needed')
    names = [t.name for t in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise RepackingError('duplicate VM type name(s): %s' % ', '.join(dup))
    return tuple(sorted(out, key=lambda t: t.name))


#: Paper V, Table 2: 6 flavors, price $/min and capacity req/min for
#: applications A and B. Prices are converted to $/hour (x 60) here.
_TABLE2 = {
    'A': ((0.003, 500), (0.006, 1197), (0.012, 2867), (0.024, 6868),
          (0.048, 16449), (0.090, 39396)),
    'B': ((0.003, 500), (0.006, 1310), (0.012, 3434), (0.024, 9000),
          (0.048, 23588), (0.090, 61819)),
}
_TABLE2_NAMES = ('small1', 'small2', 'med1', 'med2', 'large1', 'large2')


def thesis_types(app='A'):
    """The VM types of Paper V, Table 2, for application ``'A'`` or ``'B'``.

    Prices are Table 2's $/min times 60 (so $/hour, exact decimal values:
    0.18, 0.36, 0.72, 1.44, 2.88, 5.4); capacities are req/min.

    :raises RepackingError: unknown application.
    """
    if app not in _TABLE2:
        raise RepackingError('unknown application %r (A or B)' % (app,))
    return vm_types(
        VMType(name, round(price * 60, 6), cap)
        for name, (price, cap) in zip(_TABLE2_NAMES, _TABLE2[app]))


class _Catalog:
    """Exact per-type data of validated types (internal)."""

    def __init__(self, types):
        if isinstance(types, _Catalog):
            types = types.types
        types = vm_types(types)
        self.types = types
        self.names = tuple(t.name for t in types)
        self.index = {n: i for i, n in enumerate(self.names)}
        self.price = tuple(_exact(t.price, t.name) for t in types)
        self.cap = tuple(_exact(t.capacity, t.name) for t in types)
        self.price_den = _lcm_den(self.price)
        self.iprice = tuple(int(p * self.price_den) for p in self.price)

    def vector(self, counts, what='VM set'):
        """A count vector (list of int) for a ``{name: count}`` mapping."""
        vec = [0] * len(self.names)
        if counts is None:
            return vec
        if not isinstance(counts, dict):
            raise RepackingError('%s must be an object {flavor: count}, '
                                 'got %r' % (what, counts))
        for name, n in counts.items():
            if name not in self.index:
                raise RepackingError('%s: unknown flavor %r (known: %s)' % (
                    what, name, ', '.join(self.names)))
            if (isinstance(n, bool) or not isinstance(n, numbers.Integral)
                    or n < 0):
                raise RepackingError('%s: count of %s must be an integer '
                                     '>= 0, got %r' % (what, name, n))
            vec[self.index[name]] = int(n)
        return vec

    def counts(self, vec):
        return {n: c for n, c in zip(self.names, vec) if c}

    def price_of(self, vec):
        return sum((n * p for n, p in zip(vec, self.price)), Fraction(0))

    def cap_of(self, vec):
        return sum((n * c for n, c in zip(vec, self.cap)), Fraction(0))


def set_price(types, counts):
    """Price of a VM set, currency per hour (float).

    :raises RepackingError: bad types, unknown flavor or bad count.
    """
    cat = _Catalog(types)
    return float(cat.price_of(cat.vector(counts)))


def set_capacity(types, counts):
    """Total capacity of a VM set (float, the unit of the capacities).

    :raises RepackingError: bad types, unknown flavor or bad count.
    """
    cat = _Catalog(types)
    return float(cat.cap_of(cat.vector(counts)))
