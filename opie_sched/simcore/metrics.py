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
"""Recorded metrics: rows of samples, as a step function of time or one
row per step.

A :class:`Series` keeps named columns of equal length. :meth:`Series.append`
adds a row; :meth:`Series.record` adds a row at time ``t`` unless the last
row is at the same ``t``, which it overwrites (one sample per distinct
time, each holding until the next one's time: a step function).
:func:`step_integral` integrates such a step function over a window; the
simulator's and the demo's utilisations are both computed with it.
"""

import numpy as np


def step_integral(t, values, start, end):
    """The integral over ``[start, end]`` of the step function whose value
    is ``values[i]`` from ``t[i]`` until ``t[i + 1]`` (the last one until
    ``end``), zero before ``t[0]``.

    Used for time-weighted utilisation: the integral of vCPU in use (vCPU
    seconds) divided by ``(end - start) * capacity``.

    :param t: sample times, seconds, ascending (a sequence or an array of
        shape ``(n,)``).
    :param values: the samples' values, same length (any unit ``u``).
    :param start: window start, seconds.
    :param end: window end, seconds.
    :returns: float, ``u`` x seconds; 0.0 for no sample or ``end <=
        start``.
    :raises ValueError: ``t`` and ``values`` differ in length.
    """
    t = np.asarray(t, dtype=float)
    v = np.asarray(values, dtype=float)
    if t.shape != v.shape:
        raise ValueError('%d times for %d values' % (len(t), len(v)))
    if not len(t) or end <= start:
        return 0.0
    lo = np.clip(t, start, end)
    hi = np.clip(np.append(t[1:], end), start, end)
    return float(np.sum(v * (hi - lo)))


class Series:
    """Named columns of samples.

    :param columns: column names, in order; with :meth:`record`, the first
        is the time.
    :raises ValueError: no column, or a name twice.
    """

    def __init__(self, columns):
        self.columns = tuple(columns)
        if not self.columns:
            raise ValueError('a series needs at least one column')
        if len(set(self.columns)) != len(self.columns):
            raise ValueError('duplicate column names: %r' % (self.columns,))
        self._data = [[] for _ in self.columns]

    def __len__(self):
        return len(self._data[0])

    def append(self, row):
        """Add one row (a sequence in column order).

        :raises ValueError: wrong number of values.
        """
        if len(row) != len(self._data):
            raise ValueError('%d values for %d columns'
                             % (len(row), len(self._data)))
        for col, value in zip(self._data, row):
            col.append(value)

    def record(self, row):
        """Add a sample whose first value is its time; a sample at the
        same time as the last one replaces it.
        """
        data = self._data
        if data[0] and data[0][-1] == row[0]:
            if len(row) != len(data):
                raise ValueError('%d values for %d columns'
                                 % (len(row), len(data)))
            for col, value in zip(data, row):
                col[-1] = value
        else:
            self.append(row)

    def column(self, name):
        """A column's values (a list; do not change it).

        :raises KeyError: unknown column.
        """
        try:
            return self._data[self.columns.index(name)]
        except ValueError:
            raise KeyError('unknown column %r (known: %s)'
                           % (name, ', '.join(self.columns)))

    def last(self, name):
        """The last value of a column, or None when empty."""
        col = self.column(name)
        return col[-1] if col else None

    def arrays(self, dtype=float):
        """``{column: numpy array}`` (empty arrays for an empty series)."""
        return {name: np.array(col, dtype=dtype)
                for name, col in zip(self.columns, self._data)}

    def rows(self):
        """The rows, as tuples in column order."""
        return list(zip(*self._data))
