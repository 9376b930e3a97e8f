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
"""Helpers shared by the tests of the market's planning data: the hour (a
float), lives of servers and the scheduler's preempt payload."""

from opie_sched.notifications import preemption as preempt_notes


HOUR = 3600.0


def life(start_h, end_h, end):
    return {'started_at': start_h * HOUR,
            'ended_at': None if end_h is None else end_h * HOUR,
            'end': end}


def preempt_payload(preemptor, victims, action='delete'):
    """The primitive payload the scheduler sends (its own builder)."""
    note = preempt_notes.preempt_notification(
        'h1', preemptor, 'req-1', action,
        [(v, p, 'vm', 1.0) for v, p in victims], 'sched-host')
    return note.message()[3]
