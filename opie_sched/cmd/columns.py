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
"""Cell values of ``opie-sched``'s output: what a table shows and what the
machine formats (``-f json|yaml``) get, from one value.

Each class is a :class:`cliff.columns.FormattableColumn`: cliff's table,
value, csv and shell formatters print ``human_readable()``, its json and
yaml formatters ``machine_readable()`` (the value as given, built-in types
only).
"""

import json

from cliff import columns
import prettytable


class Number(columns.FormattableColumn):
    """A number shown with a printf format (default ``%g``); None as
    ``-``.
    """

    def __init__(self, value, fmt='%g'):
        super().__init__(value)
        self.fmt = fmt

    def human_readable(self):
        return '-' if self._value is None else self.fmt % self._value


class Mapping(columns.FormattableColumn):
    """A mapping shown as ``key=value`` lines (``-`` when empty)."""

    def human_readable(self):
        return '\n'.join('%s=%s' % (k, _text(v))
                         for k, v in (self._value or {}).items()) or '-'


class Counts(columns.FormattableColumn):
    """``{name: count}`` shown as ``name xCOUNT, ...`` sorted by name."""

    def human_readable(self):
        return ', '.join('%s x%d' % kv
                         for kv in sorted((self._value or {}).items())) or '-'


class Words(columns.FormattableColumn):
    """A list shown comma-separated (``-`` when empty)."""

    def human_readable(self):
        return ', '.join(_text(v) for v in self._value or ()) or '-'


class Table(columns.FormattableColumn):
    """A list of rows (dicts) shown as a nested table.

    :param value: list of dicts (what the machine formats get).
    :param fields: ``[(heading, key or callable(row) -> text), ...]``: the
        table's columns.
    """

    def __init__(self, value, fields):
        super().__init__(value)
        self.fields = fields

    def human_readable(self):
        if not self._value:
            return '-'
        return table([h for h, _ in self.fields],
                     [[_text(get(row) if callable(get) else row.get(get))
                       for _, get in self.fields] for row in self._value])


class Text(columns.FormattableColumn):
    """A value whose human form is given (e.g. a report's text) and
    whose machine form is the value.
    """

    def __init__(self, value, text):
        super().__init__(value)
        self.text = text

    def human_readable(self):
        return self.text


class Json(columns.FormattableColumn):
    """A nested value shown as indented JSON; its machine form is
    :func:`plain`.
    """

    def human_readable(self):
        return json.dumps(self._value, indent=1, sort_keys=True,
                          default=_default)

    def machine_readable(self):
        return plain(self._value)


def _default(value):
    # numpy scalars (bool_, int64, float64) have .item(); anything else
    # unknown to JSON is shown as text
    item = getattr(value, 'item', None)
    return item() if callable(item) else str(value)


def plain(value):
    """``value`` with only JSON's types (numpy scalars as Python numbers,
    tuples as lists, other objects as text).
    """
    return json.loads(json.dumps(value, default=_default))


def table(header, rows, align=None):
    """A plain text table (PrettyTable, no vertical rules) of ``rows``
    (lists of cells) under ``header``.

    :param align: one of ``'l'``, ``'r'``, ``'c'`` per column (default:
        every column left-aligned).
    """
    t = prettytable.PrettyTable(header)
    t.align = 'l'
    for name, side in zip(header, align or ()):
        t.align[name] = side
    t.border = True
    t.hrules = prettytable.HRuleStyle.HEADER \
        if hasattr(prettytable, 'HRuleStyle') else prettytable.HEADER
    t.vrules = prettytable.VRuleStyle.NONE \
        if hasattr(prettytable, 'VRuleStyle') else prettytable.NONE
    for row in rows:
        t.add_row(list(row))
    return t.get_string().strip('\n')


def _text(value):
    if value is None:
        return '-'
    if isinstance(value, columns.FormattableColumn):
        return value.human_readable()
    if isinstance(value, float):
        return '%g' % value
    if isinstance(value, (list, tuple)):
        return ', '.join(_text(v) for v in value) or '-'
    if isinstance(value, dict):
        return ', '.join('%s=%s' % (k, _text(v))
                         for k, v in value.items()) or '-'
    return str(value)
