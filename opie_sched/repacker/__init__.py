"""opie-repacker: RPM reconsolidation of running servers (thesis Paper IV).

* :mod:`.planner` -- pure: triggers (§5.3), priorities (Table 1), the RPM
  score of each move (§4.3.1, :mod:`opie_sched.rpm`), the migration budget
  and preemptible-first draining of underloaded hosts;
* :mod:`.collector` -- the planner's input from Nova and Placement
  (openstacksdk) and the utilisation history;
* :mod:`.executor` -- live migrations, one at a time;
* :mod:`.service` -- the periodic loop under a tooz lock;
* :mod:`.opts` -- the ``[opie_repacker]`` options.
"""
