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
"""The demo's built-in workload, and load models for the simulator.

:func:`generate` draws a reproducible list of
:class:`~opie_sched.workload.mapping.ServerRequest` (no trace needed):

* arrivals: a Poisson process of ``rate_per_hour`` requests per hour
  (exponential inter-arrival times), the first at time 0;
* class: each request is preemptible with probability
  ``preemptible_fraction``;
* size: one server of one of the preemptible-instances paper's flavors
  (:data:`FLAVORS`: small 1 vCPU / 2000 MB / 20 GB, medium 2 / 4000 / 40,
  large 4 / 8000 / 80), drawn with ``flavor_weights``;
* run time: a truncated (bounded) power law with density proportional to
  ``t ** -runtime_exponent`` on ``[runtime_min, runtime_max]`` seconds.
  Sedaghat's thesis gives batch VM lifetimes a truncated power law of
  exponent 2, plus 10 minutes of boot time, capped at the simulated day;
  the defaults keep the exponent and the 10-minute floor and cap at 4 hours
  to suit a demo of a few hours.

With the defaults, 100 requests arrive over about 3.3 hours and ask on
average for about 2.3 vCPUs each for about 33 minutes: an offered load near
the 32 vCPUs of the demo's 4 hosts (8 vCPU / 16000 MB / 200 GB each), so
preemptible requests backfill the idle capacity and several normal requests
find the hosts full and need preemption.

Each random quantity has its own random stream derived from the seed, so
changing e.g. the preemptible fraction does not change the arrival times.

:func:`diurnal_cpu` is the thesis' diurnal CPU demand of an interactive
service, for the simulator.
"""

import math
import random

from opie_sched.workload import mapping

#: The paper's flavors: name -> (vCPU, memory MB, disk GB).
FLAVORS = {
    'small': (1, 2000, 20),
    'medium': (2, 4000, 40),
    'large': (4, 8000, 80),
}

DEFAULT_COUNT = 100
DEFAULT_SEED = 42

#: Seconds in a day, the period of :func:`diurnal_cpu`.
DAY = 86400.0


def bounded_power_law(rng, low, high, exponent):
    """Draw from the density proportional to ``x ** -exponent`` on
    ``[low, high]`` (inverse-CDF sampling with ``rng.random()``).

    :raises ValueError: unless 0 < low <= high.
    """
    if not 0 < low <= high:
        raise ValueError('need 0 < low <= high, got %r, %r' % (low, high))
    u = rng.random()
    if low == high:
        return float(low)
    k = 1.0 - exponent
    if abs(k) < 1e-12:               # density 1/x: log-uniform
        return low * (high / low) ** u
    a, b = low ** k, high ** k
    return (a + u * (b - a)) ** (1.0 / k)


def generate(seed=DEFAULT_SEED, count=None, rate_per_hour=30.0,
             preemptible_fraction=0.5, flavor_weights=(1.0, 1.0, 1.0),
             runtime_min=600.0, runtime_max=4 * 3600.0,
             runtime_exponent=2.0):
    """Generate the demo workload.

    :param seed: int; the same seed and parameters give the same list
    :param count: number of requests (None: :data:`DEFAULT_COUNT` = 100)
    :param rate_per_hour: mean arrivals per hour (Poisson)
    :param preemptible_fraction: probability (0..1) that a request is
        preemptible
    :param flavor_weights: relative weights of small, medium, large
    :param runtime_min: shortest run time, seconds
    :param runtime_max: longest run time, seconds
    :param runtime_exponent: power-law exponent of the run-time density
    :returns: list of :class:`~opie_sched.workload.mapping.ServerRequest`
        (one server each, ``job_id`` 1..count, ``source_line`` None),
        sorted by submit time (seconds from 0)
    :raises ValueError: on a negative count, a non-positive rate, a
        fraction outside 0..1, bad weights or run-time bounds.
    """
    if count is None:
        count = DEFAULT_COUNT
    if count < 0:
        raise ValueError('count must be >= 0, got %r' % (count,))
    if not rate_per_hour > 0:
        raise ValueError('rate_per_hour must be > 0, got %r'
                         % (rate_per_hour,))
    if not 0.0 <= preemptible_fraction <= 1.0:
        raise ValueError('preemptible_fraction must be in 0..1, got %r'
                         % (preemptible_fraction,))
    weights = [float(w) for w in flavor_weights]
    if len(weights) != len(FLAVORS) or min(weights) < 0 or \
            sum(weights) <= 0:
        raise ValueError('flavor_weights must be %d non-negative numbers '
                         'with a positive sum, got %r'
                         % (len(FLAVORS), flavor_weights))
    if not 0 < runtime_min <= runtime_max:
        raise ValueError('need 0 < runtime_min <= runtime_max, got %r, %r'
                         % (runtime_min, runtime_max))

    def stream(name):
        return random.Random('%s/%s' % (seed, name))

    arrivals, kinds, sizes, runtimes = (
        stream('arrivals'), stream('class'), stream('flavor'),
        stream('runtime'))
    flavors = list(FLAVORS.values())
    cumulative = []
    acc = 0.0
    for w in weights:
        acc += w / sum(weights)
        cumulative.append(acc)
    rate = rate_per_hour / 3600.0
    t = 0.0
    requests = []
    for i in range(count):
        if i:
            t += arrivals.expovariate(rate)
        u = sizes.random()
        index = next((j for j, c in enumerate(cumulative) if u < c),
                     len(flavors) - 1)
        vcpus, memory_mb, disk_gb = flavors[index]
        requests.append(mapping.ServerRequest(
            job_id=i + 1,
            submit=t,
            runtime=bounded_power_law(runtimes, runtime_min, runtime_max,
                                      runtime_exponent),
            vcpus=vcpus, memory_mb=memory_mb, disk_gb=disk_gb, count=1,
            preemptible=kinds.random() < preemptible_fraction,
            source_line=None))
    return requests


def diurnal_cpu(t, cpu_l, u, s):
    """CPU demand of an interactive service at time ``t``.

    Sedaghat's thesis (services model, equations 11 and 14):
    ``CPU(t) = (CPU_l / 2) * (1 + u * sin(2*pi*t / 86400 - 2*pi*s))``.

    :param t: seconds (a number, or a numpy array for many times)
    :param cpu_l: the VM type's expected maximum CPU demand (e.g. vCPUs)
    :param u: amplitude in [0, 1] (the thesis draws it uniformly)
    :param s: phase shift in days, in [0, 1] (drawn uniformly)
    :returns: demand in the unit of ``cpu_l``, between
        ``cpu_l * (1 - u) / 2`` and ``cpu_l * (1 + u) / 2``
    :raises ValueError: if ``u`` or ``s`` is outside [0, 1].
    """
    if not 0.0 <= u <= 1.0:
        raise ValueError('u must be in [0, 1], got %r' % (u,))
    if not 0.0 <= s <= 1.0:
        raise ValueError('s must be in [0, 1], got %r' % (s,))
    phase = 2.0 * math.pi * s
    if isinstance(t, (int, float)):
        wave = math.sin(2.0 * math.pi * t / DAY - phase)
    else:
        import numpy
        wave = numpy.sin(2.0 * math.pi * numpy.asarray(t, dtype=float)
                         / DAY - phase)
    return (cpu_l / 2.0) * (1.0 + u * wave)


def thesis_vm_workload(seed=DEFAULT_SEED, hours=24.0, services=100,
                       batch_rate_per_min=1.0, vm_types=None,
                       batch_min=60.0, batch_cap=None, exponent=2.0,
                       boot=600.0):
    """The mixed workload of thesis Paper IV §5.1 (services and batch).

    * Services (interactive): ``services`` VMs present from time 0 for the
      whole run; CPU demand :func:`diurnal_cpu` with ``cpu_l`` the VM
      type's CPU, amplitude ``u`` and phase ``s`` uniform in [0, 1];
      memory demand proportional (eq. 15, ``beta`` = the type's memory /
      CPU, so demand stays within the reservation).
    * Batch jobs: Poisson arrivals (``batch_rate_per_min`` per minute);
      usage equal to their reservation; lifetime a truncated power law of
      exponent ``exponent`` on [``batch_min``, ``batch_cap``] s plus
      ``boot`` s (10 minutes of boot time), capped at the run
      (``batch_cap`` default: the run's length).
    * VM types: ``vm_types`` ``{name: (cpu, memory)}``, each drawn
      uniformly (default: the thesis' Table 2, ECU and GB).

    :returns: list of dicts ``{id, kind ('service' or 'batch'), type, cpu,
        mem, arrival (s), end (s or None), u, s}`` sorted by arrival.
    """
    if vm_types is None:
        vm_types = THESIS_VM_TYPES
    horizon = hours * 3600.0
    cap = horizon if batch_cap is None else batch_cap
    names = sorted(vm_types)
    rng_type = random.Random('%s-type' % seed)
    rng_svc = random.Random('%s-service' % seed)
    rng_arr = random.Random('%s-arrival' % seed)
    rng_life = random.Random('%s-life' % seed)
    out = []
    for k in range(services):
        name = rng_type.choice(names)
        cpu, mem = vm_types[name]
        out.append({'id': k, 'kind': 'service', 'type': name, 'cpu': cpu,
                    'mem': mem, 'arrival': 0.0, 'end': None,
                    'u': rng_svc.random(), 's': rng_svc.random()})
    t = 0.0
    while batch_rate_per_min > 0:
        t += rng_arr.expovariate(batch_rate_per_min / 60.0)
        if t >= horizon:
            break
        name = rng_type.choice(names)
        cpu, mem = vm_types[name]
        life = min(bounded_power_law(rng_life, batch_min, cap, exponent)
                   + boot, horizon)
        out.append({'id': len(out), 'kind': 'batch', 'type': name,
                    'cpu': cpu, 'mem': mem, 'arrival': t, 'end': t + life,
                    'u': 0.0, 's': 0.0})
    return out


#: VM types of thesis Paper IV Table 2: name -> (ECU, memory GB).
THESIS_VM_TYPES = {
    'c3.xlarge': (4, 7.5), 'c3.2xlarge': (8, 15), 'r3.large': (2, 15.25),
    'r3.xlarge': (4, 30.5), 'm3.large': (2, 7.5), 'm3.xlarge': (4, 15),
}
