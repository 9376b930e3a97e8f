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
"""Helpers shared by the tests of this package."""

from opie_sched.workload import swf


def line(job=1, submit=0, run=100, procs=4, status=1, queue=-1,
         partition=-1, wait=-1, req_procs=-1, user=1):
    fields = [job, submit, wait, run, procs, -1, -1, req_procs, -1, -1,
              status, user, -1, -1, queue, partition, -1, -1]
    return ' '.join(str(f) for f in fields) + '\n'


def job(number=1, submit=0, run=100, procs=4, status=1, queue=-1,
        partition=-1, req_procs=-1, line_no=0):
    return swf.SWFJob(number, submit, -1, run, procs, -1, -1, req_procs,
                      -1, -1, status, -1, -1, -1, queue, partition, -1, -1,
                      line_no=line_no)
