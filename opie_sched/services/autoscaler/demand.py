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
"""Demand sources of ``opie-autoscaler``: an application's ``C_req``.

The required capacity ``C_req`` of Paper V is a number >= 0 in the unit of
the application's capacities ``c_i`` (e.g. requests per minute). Sources
are stevedore plugins of the namespace ``opie_sched.autoscaler.demand``:

``static``
    :class:`StaticDemand`, a value given in the applications file.
``file``
    :class:`FileDemand`, a file the application (or anything else) writes.
``http``
    :class:`HTTPDemand`, an HTTP endpoint, e.g. the application's own
    scaling signal or a Prometheus instant query (``key:
    data.result.0.value.1``).

A source is declared per application as an object ``{"source": NAME,
OPTION: VALUE, ...}``; :func:`load` builds it. :meth:`DemandSource.read`
returns the demand as a float or raises :class:`DemandError` saying why
(missing, stale, unreadable or invalid); the service then keeps the
current set of servers and logs that reason.
"""

import abc
import json
import math
import numbers
import os
import time

from opie_sched import plugins

NAMESPACE = 'opie_sched.autoscaler.demand'


class DemandError(Exception):
    """The demand is missing or invalid; the message says why."""


def _number(value, where):
    """``value`` as a finite float >= 0 (numbers or numeric strings)."""
    if isinstance(value, bool):
        raise DemandError('%s: demand must be a number, got %r'
                          % (where, value))
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise DemandError('%s: demand must be a number, got %r'
                              % (where, value[:80]))
    if not isinstance(value, numbers.Real):
        raise DemandError('%s: demand must be a number, got %r'
                          % (where, value))
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise DemandError('%s: demand must be a finite number >= 0, got %r'
                          % (where, value))
    return value


def _lookup(doc, key, where):
    """``doc`` at a dotted ``key`` (list items by index), e.g. ``a.0.b``."""
    if key is None:
        return doc
    node = doc
    for part in str(key).split('.'):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif (isinstance(node, list) and part.lstrip('-').isdigit()
              and -len(node) <= int(part) < len(node)):
            node = node[int(part)]
        else:
            raise DemandError('%s: no %r in the document (key %r)'
                              % (where, part, key))
    return node


def parse_document(text, key, where):
    """The demand in ``text``: a bare number, or JSON (``key`` selects).

    :param text: str.
    :param key: dotted path into a JSON document, or None for a bare
        number / a JSON number.
    :param where: what to name in error messages (a path or URL).
    :returns: float >= 0.
    :raises DemandError: empty, not JSON, no such key, not a number.
    """
    text = text.strip()
    if not text:
        raise DemandError('%s: empty, no demand' % where)
    try:
        doc = json.loads(text)
    except ValueError:
        if key is not None:
            raise DemandError('%s: not a JSON document (key %r)'
                              % (where, key))
        return _number(text, where)
    if key is None and isinstance(doc, dict) and 'demand' in doc:
        key = 'demand'
    return _number(_lookup(doc, key, where), where)


def _positive(value, what, allow_none=True):
    if value is None and allow_none:
        return None
    if (isinstance(value, bool) or not isinstance(value, numbers.Real)
            or not math.isfinite(value) or value <= 0):
        raise DemandError('%s must be a number > 0, got %r' % (what, value))
    return float(value)


class DemandSource(metaclass=abc.ABCMeta):
    """Base class of the demand sources (plugin interface).

    Subclasses take their options as keyword arguments (validated in
    ``__init__``, :class:`DemandError` on a bad one) and implement
    :meth:`read`.
    """

    #: the plugin name
    name = None

    @abc.abstractmethod
    def read(self):
        """The current demand ``C_req``, a float >= 0 (capacity unit).

        :raises DemandError: missing or invalid demand (says why).
        """

    def describe(self):
        """A short description for logs."""
        return self.name


class StaticDemand(DemandSource):
    """A fixed demand from the applications file.

    :param value: ``C_req``, a number >= 0 (numeric strings accepted).
    :raises DemandError: bad value.
    """

    name = 'static'

    def __init__(self, value=None):
        if value is None:
            raise DemandError('static demand needs a value')
        self.value = _number(value, 'static demand')

    def read(self):
        return self.value

    def describe(self):
        return 'static %g' % self.value


class FileDemand(DemandSource):
    """The demand in a file the application updates.

    The file holds a bare number (``1200``), a JSON number, or a JSON
    object: ``{"demand": 1200}`` or, with ``key``, the value at that dotted
    path.

    :param path: the file (str).
    :param key: optional dotted path into a JSON object.
    :param max_age: optional seconds; an older file (by mtime) is stale and
        its demand is not used.
    :raises DemandError: bad options.
    """

    name = 'file'

    def __init__(self, path=None, key=None, max_age=None, clock=time.time):
        if not isinstance(path, str) or not path:
            raise DemandError('file demand needs a path, got %r' % (path,))
        self.path = path
        self.key = key
        self.max_age = _positive(max_age, 'file demand max_age')
        self._clock = clock

    def read(self):
        try:
            with open(self.path) as f:
                text = f.read(1 << 20)
                mtime = os.fstat(f.fileno()).st_mtime
        except OSError as exc:
            raise DemandError('cannot read %s: %s'
                              % (self.path, exc.strerror or exc))
        except UnicodeDecodeError:
            raise DemandError('%s is not text' % self.path)
        if self.max_age is not None:
            age = self._clock() - mtime
            if age > self.max_age:
                raise DemandError('%s is stale: written %.0f s ago (max_age '
                                  '%g s)' % (self.path, age, self.max_age))
        return parse_document(text, self.key, self.path)

    def describe(self):
        return 'file %s' % self.path


class HTTPDemand(DemandSource):
    """The demand served over HTTP(S) by a GET on ``url``.

    The body is parsed as :class:`FileDemand` does (bare number, JSON,
    ``key`` path); a Prometheus instant query works with ``key:
    data.result.0.value.1``.

    :param url: http:// or https:// URL.
    :param key: optional dotted path into the JSON body.
    :param timeout: seconds per request (default 5).
    :param headers: optional dict of request headers.
    :raises DemandError: bad options.
    """

    name = 'http'

    def __init__(self, url=None, key=None, timeout=5.0, headers=None,
                 session=None):
        if not isinstance(url, str) or not url.startswith(('http://',
                                                           'https://')):
            raise DemandError('http demand needs an http(s) url, got %r'
                              % (url,))
        if headers is not None and not isinstance(headers, dict):
            raise DemandError('http demand headers must be an object')
        self.url = url
        self.key = key
        self.timeout = _positive(timeout, 'http demand timeout', False)
        self.headers = dict(headers or {})
        self._session = session

    def read(self):
        import requests
        session = self._session or requests
        try:
            resp = session.get(self.url, timeout=self.timeout,
                               headers=self.headers)
        except requests.RequestException as exc:
            raise DemandError('GET %s failed: %s' % (self.url, exc))
        if not 200 <= resp.status_code < 300:
            raise DemandError('GET %s answered %s' % (self.url,
                                                      resp.status_code))
        return parse_document(resp.text, self.key, self.url)

    def describe(self):
        return 'http %s' % self.url


def load(spec, where='demand'):
    """The demand source declared by ``spec``.

    :param spec: ``{"source": NAME, OPTION: VALUE, ...}`` where NAME is a
        plugin of :data:`NAMESPACE` (``static``, ``file``, ``http``), or a
        bare number (a static demand).
    :param where: what to name in error messages (e.g. the application).
    :returns: a :class:`DemandSource`.
    :raises DemandError: unknown source or bad options.
    """
    if isinstance(spec, numbers.Real) and not isinstance(spec, bool):
        spec = {'source': 'static', 'value': spec}
    if not isinstance(spec, dict) or 'source' not in spec:
        raise DemandError('%s: must be a number or an object with a '
                          '"source", got %r' % (where, spec))
    options = dict(spec)
    name = options.pop('source')
    try:
        source = plugins.load(NAMESPACE, name, kind='demand source',
                              invoke=False)
    except plugins.PluginError as exc:
        raise DemandError('%s: %s' % (where, exc)) from exc
    try:
        return source(**options)
    except TypeError as exc:
        raise DemandError('%s: bad options for the %s source: %s'
                          % (where, name, exc))
    except DemandError as exc:
        raise DemandError('%s: %s' % (where, exc))
