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
"""Application declarations of ``opie-autoscaler``.

An application is a server group (or a server tag) whose servers the
autoscaler owns, the flavors it may run on, each with the application's
capacity ``c_i`` on one server of that flavor and the flavor's price
``p_i`` (currency per **hour**) -- the VM types of thesis Paper V, 3 --,
and a demand source (:mod:`opie_sched.services.autoscaler.demand`) giving
``C_req`` in the unit of the capacities.

The applications file is YAML or JSON: ``{"applications": [APP, ...]}`` or
the list alone. An APP::

    name: web                    # required, [A-Za-z0-9._-]+, unique
    server_group: web-servers    # name or id of an existing server group
    # tag: web                   # ... or a server tag (exactly one of them)
    image: cirros                # image name or id for new servers
    networks: auto               # 'auto' (default), 'none' or [uuid, ...]
    flavors:                     # required, one or more
      m1.small: {capacity: 500, price: 0.18}
      m1.medium: {capacity: 1197}   # price from the flavor's extra spec
    demand: {source: file, path: /run/web/demand}   # required
    budget: 4.0                  # optional, currency per budget_period
    budget_period: 1.0           # hours (default 1)
    # optional overrides of the [opie_autoscaler] options of those names:
    stability_interval: 16.67    # hours (Paper V's d)
    gain_threshold: 0.01         # Paper V's K
    repack_time: 240             # seconds
    c_extra: 1.2                 # currency per hour
    health_url: http://{address}:8080/healthz
    boot_timeout: 300            # seconds
    max_servers: 20              # most servers the application may run
    market_url: catalog   # spot market: URL or catalog (null: none)
    market_pool: default         # the market pool pricing its flavors
    # slo: {policy: themis-vertical-deadline, ...}  # market SLO controller
    #   instead of the repacking planner, see
    # opie_sched.services.autoscaler.policies

A flavor's price ``p_i`` (currency per hour, Paper V's price of VM type
*i*) is, in this order of precedence:

1. the file's ``price``;
2. for a preemptible flavor (extra spec ``opie:preemptible=true``, see
   :mod:`opie_sched.common.flavors`) when a market endpoint is named
   (``market_url`` here or in ``[opie_autoscaler]``): its spot price in
   the pool ``market_pool`` (default ``default``), ``sum_r price_r *
   amount_r`` over vCPUs and MB of RAM with the market's current prices
   per unit-hour (Merkat eq. 1; :mod:`opie_sched.services.autoscaler.spot`),
   fetched once per round. If the market cannot price it, the application
   keeps its current set this round and the log says why;
3. the flavor's extra spec ``[opie_autoscaler] price_extra_spec`` (default
   ``opie:price``, a decimal number, currency per hour).

Anything invalid raises :class:`AppError` naming the file, the application
and the key; nothing is changed in the cloud because of a bad declaration.
"""

import dataclasses
import math
import numbers
import re

from opie_sched import flavormix
from opie_sched.services.autoscaler import demand as demand_mod

_NAME_RE = re.compile(r'^[A-Za-z0-9._-]+$')

_KEYS = {'name', 'server_group', 'tag', 'image', 'networks', 'flavors',
         'demand', 'budget', 'budget_period', 'stability_interval',
         'gain_threshold', 'repack_time', 'c_extra', 'health_url',
         'boot_timeout', 'max_servers', 'market_url', 'market_pool', 'slo'}
#: Keys overriding the [opie_autoscaler] option of the same name.
OVERRIDES = ('stability_interval', 'gain_threshold', 'repack_time',
             'c_extra', 'health_url', 'boot_timeout', 'max_servers',
             'market_url', 'market_pool')


class AppError(ValueError):
    """An invalid application declaration or flavor price (says which)."""


@dataclasses.dataclass(frozen=True)
class FlavorSpec:
    """One flavor of an application: capacity and optional price.

    :param name: the Nova flavor name.
    :param capacity: ``c_i`` > 0, the application's capacity unit.
    :param price: ``p_i`` > 0, currency per hour, or None (extra spec).
    """

    name: str
    capacity: float
    price: float = None


@dataclasses.dataclass(frozen=True)
class Application:
    """A validated application declaration (see the module docstring)."""

    name: str
    server_group: str
    tag: str
    image: str
    networks: object
    flavors: tuple
    demand: dict
    budget: float = None
    budget_period: float = 1.0
    overrides: dict = dataclasses.field(default_factory=dict)
    slo: dict = None

    @property
    def owner(self):
        """``'group NAME'`` or ``'tag NAME'``, for logs."""
        return ('server group %s' % self.server_group if self.server_group
                else 'tag %s' % self.tag)

    def demand_source(self):
        """The application's :class:`~.demand.DemandSource`.

        :raises opie_sched.services.autoscaler.demand.DemandError: bad
            declaration.
        """
        return demand_mod.load(self.demand, 'application %s: demand'
                               % self.name)


def _positive(value, what, zero=False):
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not math.isfinite(value) or value < 0
            or (value == 0 and not zero)):
        raise AppError('%s must be a number %s 0, got %r'
                       % (what, '>=' if zero else '>', value))
    return value


def _string(value, what):
    if not isinstance(value, str) or not value.strip():
        raise AppError('%s must be a non-empty string, got %r'
                       % (what, value))
    return value


def check_health_url(template, what):
    """Validate a health URL template (fields {address}, {id}, {name}).

    :raises AppError: not an http(s) URL or an unknown field.
    """
    _string(template, what)
    if not template.startswith(('http://', 'https://')):
        raise AppError('%s must be an http(s) URL, got %r' % (what, template))
    try:
        template.format(address='192.0.2.1', id='id', name='name')
    except (KeyError, IndexError, ValueError) as exc:
        raise AppError('%s: bad template %r (fields: {address}, {id}, '
                       '{name}): %s' % (what, template, exc))
    return template


def check_market_url(url, what):
    """Validate a market endpoint: an http(s) URL (with or without
    ``/v1``) or ``catalog`` (the ``spot-market`` entry of the Keystone
    catalog).

    :raises AppError: neither.
    """
    from opie_sched.services.autoscaler import spot
    _string(url, what)
    if url != spot.CATALOG and not url.startswith(('http://', 'https://')):
        raise AppError('%s must be an http(s) URL such as '
                       'http://market:8788/v1, or %s, got %r'
                       % (what, spot.CATALOG, url))
    return url


def parse_application(doc, where='applications file'):
    """A validated :class:`Application` from one declaration.

    :param doc: the APP object (dict).
    :param where: what to name in errors (file name).
    :raises AppError: any invalid or missing key.
    """
    if not isinstance(doc, dict):
        raise AppError('%s: an application must be an object, got %r'
                       % (where, doc))
    name = doc.get('name')
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise AppError('%s: application name must match [A-Za-z0-9._-]+, '
                       'got %r' % (where, name))
    here = '%s: application %s' % (where, name)
    unknown = sorted(set(doc) - _KEYS)
    if unknown:
        raise AppError('%s: unknown key(s) %s (known: %s)' % (
            here, ', '.join(map(str, unknown)), ', '.join(sorted(_KEYS))))
    group, tag = doc.get('server_group'), doc.get('tag')
    if (group is None) == (tag is None):
        raise AppError('%s: give exactly one of server_group and tag' % here)
    if group is not None:
        _string(group, '%s: server_group' % here)
    else:
        _string(tag, '%s: tag' % here)
        if ',' in tag or '/' in tag:
            raise AppError('%s: tag must not contain "," or "/", got %r'
                           % (here, tag))
    image = _string(doc.get('image'), '%s: image' % here)
    networks = doc.get('networks', 'auto')
    if isinstance(networks, list):
        if not networks:
            raise AppError('%s: networks must not be an empty list' % here)
        for net in networks:
            _string(net, '%s: networks item' % here)
    elif networks not in ('auto', 'none'):
        raise AppError('%s: networks must be "auto", "none" or a list of '
                       'network ids, got %r' % (here, networks))

    raw = doc.get('flavors')
    if not isinstance(raw, dict) or not raw:
        raise AppError('%s: flavors must be a non-empty object {flavor: '
                       '{capacity, price}}, got %r' % (here, raw))
    flavors = []
    for fname, entry in raw.items():
        fhere = '%s: flavors.%s' % (here, fname)
        _string(fname, '%s: flavor name' % here)
        if not isinstance(entry, dict):
            raise AppError('%s must be an object {capacity, price}' % fhere)
        bad = sorted(set(entry) - {'capacity', 'price'})
        if bad:
            raise AppError('%s: unknown key(s) %s (known: capacity, price)'
                           % (fhere, ', '.join(map(str, bad))))
        if 'capacity' not in entry:
            raise AppError('%s: missing capacity' % fhere)
        cap = _positive(entry['capacity'], '%s.capacity' % fhere)
        price = entry.get('price')
        if price is not None:
            price = _positive(price, '%s.price' % fhere)
        flavors.append(FlavorSpec(fname, cap, price))
    flavors.sort(key=lambda f: f.name)

    if 'demand' not in doc:
        raise AppError('%s: missing demand' % here)
    spec = doc['demand']
    try:
        demand_mod.load(spec, '%s: demand' % here)
    except demand_mod.DemandError as exc:
        raise AppError(str(exc))
    if not isinstance(spec, dict):
        spec = {'source': 'static', 'value': spec}

    budget = doc.get('budget')
    if budget is not None:
        budget = _positive(budget, '%s: budget' % here, zero=True)
    period = _positive(doc.get('budget_period', 1.0),
                       '%s: budget_period' % here)
    overrides = {}
    for key in OVERRIDES:
        if key not in doc:
            continue
        value = doc[key]
        if key == 'health_url':
            if value is not None:
                check_health_url(value, '%s: health_url' % here)
        elif key == 'max_servers':
            if (isinstance(value, bool) or not isinstance(value, int)
                    or value < 1):
                raise AppError('%s: max_servers must be an integer >= 1, '
                               'got %r' % (here, value))
        elif key == 'market_url':
            if value is not None:
                check_market_url(value, '%s: market_url' % here)
        elif key == 'market_pool':
            _string(value, '%s: market_pool' % here)
        elif key == 'c_extra':
            _positive(value, '%s: c_extra' % here, zero=True)
        else:
            _positive(value, '%s: %s' % (here, key),
                      zero=key in ('gain_threshold', 'repack_time'))
        overrides[key] = value
    slo_spec = doc.get('slo')
    if slo_spec is not None:
        from opie_sched.services.autoscaler import policies
        try:
            policies.load_policy(slo_spec, '%s: slo' % here)
        except policies.PolicyError as exc:
            raise AppError(str(exc))
        slo_spec = dict(slo_spec)
    return Application(
        name=name, server_group=group, tag=tag, image=image,
        networks=networks, flavors=tuple(flavors), demand=dict(spec),
        budget=budget, budget_period=period, overrides=overrides,
        slo=slo_spec)


def parse_applications(doc, where='applications file'):
    """Validated applications from a parsed file.

    :param doc: ``{"applications": [...]}`` or the list.
    :returns: list of :class:`Application`.
    :raises AppError: bad structure, bad application, duplicate names.
    """
    if isinstance(doc, dict):
        extra = sorted(set(doc) - {'applications'})
        if extra or 'applications' not in doc:
            raise AppError('%s: expected {"applications": [...]}, got keys '
                           '%s' % (where, ', '.join(map(str, doc)) or
                                   'none'))
        doc = doc['applications']
    if not isinstance(doc, list):
        raise AppError('%s: applications must be a list, got %r'
                       % (where, type(doc).__name__))
    apps = [parse_application(d, where) for d in doc]
    names = [a.name for a in apps]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise AppError('%s: duplicate application name(s): %s'
                       % (where, ', '.join(dup)))
    return apps


def load_applications(path):
    """The applications of a YAML or JSON file (JSON is YAML).

    :raises AppError: unreadable file, bad YAML/JSON, invalid content.
    """
    import yaml
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except OSError as exc:
        raise AppError('cannot read %s: %s' % (path, exc.strerror or exc))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise AppError('%s is not valid YAML/JSON: %s'
                       % (path, ' '.join(str(exc).split())))
    if doc is None:
        raise AppError('%s is empty' % path)
    return parse_applications(doc, path)


def parse_price(value, what):
    """A price from a flavor extra spec: decimal string > 0, currency/hour.

    :raises AppError: not a finite number > 0.
    """
    try:
        price = float(str(value).strip())
    except ValueError:
        raise AppError('%s must be a decimal number, got %r' % (what, value))
    return _positive(price, what)


@dataclasses.dataclass(frozen=True)
class Resolved:
    """An application resolved against the cloud for one round.

    :param types: tuple of :class:`opie_sched.flavormix.VMType` (prices in
        currency per hour).
    :param flavor_ids: ``{flavor name: flavor id}``.
    :param image_id: image id for new servers.
    :param group_id: server group id, or None for a tag application.
    :param price_sources: ``{flavor name: where its price comes from}``:
        ``'file'``, ``'extra spec KEY'`` or ``'market URL pool P period
        T'``.
    """

    types: tuple
    flavor_ids: dict
    image_id: str
    group_id: str
    price_sources: dict = dataclasses.field(default_factory=dict)

    def market_prices(self):
        """``'FLAVOR P/h (market ...), ...'`` of the market-priced flavors,
        or ``''``: for the decision log.
        """
        prices = {t.name: t.price for t in self.types}
        return ', '.join('%s %.4g/h (%s)' % (name, prices[name], source)
                         for name, source in sorted(
                             self.price_sources.items())
                         if source.startswith('market '))


def _preemptible(flavor, what):
    """Whether an openstacksdk flavor is preemptible (checked strictly)."""
    from opie_sched.common import flavors as flavors_mod
    disk = getattr(flavor, 'disk', None)
    if disk is not None:
        disk = flavors_mod.disk_gb(disk, getattr(flavor, 'ephemeral', None),
                                   getattr(flavor, 'swap', None))
    try:
        return flavors_mod.is_preemptible(
            getattr(flavor, 'extra_specs', None) or {},
            vcpus=getattr(flavor, 'vcpus', None),
            ram_mb=getattr(flavor, 'ram', None), disk_gb=disk)
    except flavors_mod.InvalidPreemptibleFlavor as exc:
        raise AppError('%s: cannot price it at the market: %s' % (what, exc))


def resolve(app, conn, price_extra_spec='opie:price', market=None,
            market_url=None, market_pool=None):
    """Look the application's flavors, prices, image and group up.

    Prices by precedence: the file's, then -- for a preemptible flavor, when
    ``market`` and ``market_url`` are given -- the spot market's, then the
    extra spec ``price_extra_spec`` (see the module docstring).

    :param conn: an ``openstack.connection.Connection``.
    :param market: a :class:`opie_sched.services.autoscaler.spot.SpotPrices`,
        or
        None (no market prices).
    :param market_url: the market endpoint (e.g. http://market:8788/v1),
        or None (no market prices).
    :param market_pool: the market pool pricing the flavors (default
        :data:`opie_sched.services.autoscaler.spot.DEFAULT_POOL`).
    :returns: :class:`Resolved`.
    :raises AppError: unknown flavor, image or group, or a flavor without a
        valid price.
    :raises opie_sched.services.autoscaler.spot.MarketError: the market cannot
        price
        a preemptible flavor (unreachable, bad answer, unknown pool...).
    """
    from openstack import exceptions as sdk_exc
    from opie_sched.services.autoscaler import spot
    here = 'application %s' % app.name
    use_market = market is not None and bool(market_url)
    pool = market_pool or spot.DEFAULT_POOL
    types, ids, sources = [], {}, {}
    for spec in app.flavors:
        try:
            flavor = conn.compute.find_flavor(
                spec.name, ignore_missing=False, get_extra_specs=True)
        except sdk_exc.ResourceNotFound:
            raise AppError('%s: flavor %s does not exist' % (here, spec.name))
        price, source = spec.price, 'file'
        if price is None and use_market and _preemptible(
                flavor, '%s: flavor %s' % (here, spec.name)):
            try:
                price, quote = market.flavor_price(market_url, pool, flavor)
            except spot.MarketError as exc:
                raise spot.MarketError('flavor %s: %s' % (spec.name, exc))
            source = quote.describe(pool)
        if price is None:
            specs = getattr(flavor, 'extra_specs', None) or {}
            if price_extra_spec not in specs:
                raise AppError('%s: flavor %s has no price: give flavors.%s'
                               '.price in the applications file or set the '
                               'extra spec %s' % (here, spec.name, spec.name,
                                                  price_extra_spec))
            price = parse_price(specs[price_extra_spec],
                                '%s: extra spec %s of flavor %s' % (
                                    here, price_extra_spec, spec.name))
            source = 'extra spec %s' % price_extra_spec
        types.append(flavormix.VMType(spec.name, price, spec.capacity))
        ids[spec.name] = flavor.id
        sources[spec.name] = source
    try:
        image = conn.image.find_image(app.image, ignore_missing=False)
    except sdk_exc.ResourceNotFound:
        raise AppError('%s: image %s does not exist' % (here, app.image))
    except sdk_exc.DuplicateResource:
        raise AppError('%s: image name %s is ambiguous, give its id'
                       % (here, app.image))
    group_id = None
    if app.server_group:
        try:
            group = conn.compute.find_server_group(app.server_group,
                                                   ignore_missing=False)
        except sdk_exc.ResourceNotFound:
            raise AppError('%s: server group %s does not exist'
                           % (here, app.server_group))
        except sdk_exc.DuplicateResource:
            raise AppError('%s: server group name %s is ambiguous, give its '
                           'id' % (here, app.server_group))
        group_id = group.id
    return Resolved(types=flavormix.vm_types(types), flavor_ids=ids,
                    image_id=image.id, group_id=group_id,
                    price_sources=sources)
