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
"""The plain-text tables the scenarios print (paper vs ours)."""


def text_table(header, rows):
    """A plain text table: first column left-aligned, others right-aligned,
    a dashed rule under the header.

    :param header: list of cells; ``rows``: list of lists of cells (any
        values; ``str()`` is applied).
    :returns: str (no trailing newline).
    """
    cells = [[str(c) for c in header]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[k]) for r in cells) for k in range(len(header))]
    lines = []
    for i, row in enumerate(cells):
        lines.append('  '.join(c.ljust(w) if k == 0 else c.rjust(w)
                               for k, (c, w) in enumerate(zip(row, widths))))
        if i == 0:
            lines.append('  '.join('-' * w for w in widths))
    return '\n'.join(lines)
