"""opie_sched: preemptible instances and smarter placement for Nova."""
