"""``opie-autoscaler``: the repacking autoscaler service (issue 5).

Source: thesis Paper V (M. Sedaghat, F. Hernandez-Rodriguez, E. Elmroth,
*A Virtual Machine Re-packing Approach to the Horizontal vs. Vertical
Elasticity Trade-off for Cloud Autoscaling*, CAC'13) for the planner and the
make-before-break transitions, and Merkat's Algorithm 3 for the budget cap;
the planning itself is :mod:`opie_sched.repacking`.

Modules:

* :mod:`.opts` -- the ``[opie_autoscaler]`` oslo.config options.
* :mod:`.app` -- application declarations (applications file, prices).
* :mod:`.spot` -- prices of preemptible flavors from the opie-market spot
  market (Merkat eq. 1 prices per unit-hour -> ``p_i`` per hour).
* :mod:`.demand` -- demand sources (stevedore namespace
  ``opie_sched.autoscaler.demand``: ``static``, ``file``, ``http``).
* :mod:`.executor` -- make-before-break execution through openstacksdk.
* :mod:`.service` -- the periodic loop, one tooz lock per application.
"""
