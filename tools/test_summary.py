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
"""Print the last stestr run as one plain line.

The line reads 'N passed, N failed, N skipped'.

stestr's own summary ("Totals ... - Passed: N") is not a format every CI
reader knows; this line is.
"""

import subprocess
import sys

import subunit
import testtools


def main():
    stream = subprocess.run(['stestr', 'last', '--subunit'],
                            capture_output=True, check=True).stdout
    import io
    case = subunit.ByteStreamToStreamResult(io.BytesIO(stream),
                                            non_subunit_name='stdout')
    summary = testtools.StreamSummary()
    result = testtools.StreamResultRouter(summary)
    summary.startTestRun()
    case.run(result)
    summary.stopTestRun()
    failed = len(summary.errors) + len(summary.failures)
    skipped = len(summary.skipped)
    passed = summary.testsRun - failed - skipped
    print('tests: %d passed, %d failed, %d skipped' % (passed, failed,
                                                       skipped))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
