"""``opie-sched devcloud``: a multi-process all-in-one cloud on this machine.

Keystone, Placement, Glance (file store), nova-api (under gunicorn),
nova-conductor, **opie-scheduler**, N nova-compute services with nova's fake
driver, neutron-server serving its API only (ML2 without agents; servers
use ``--nic none``) or, with ``--neutron standin``, a stand-in (see
:mod:`opie_sched.devcloud.neutron_standin`),
opie-market and its REST API behind keystonemiddleware, and on request
opie-autoscaler and opie-repacker; each a separate process logging into the
state directory, with databases on the local MariaDB and messaging on the
local RabbitMQ (one database-name prefix and one vhost per state directory).

Modules: :mod:`.layout` (state directory, names, ports), :mod:`.config`
(configuration rendering), :mod:`.preflight` (what must be present),
:mod:`.process` (detached processes, readiness), :mod:`.bootstrap` (the
steps), :mod:`.cloud` (up/down/status), :mod:`.cli` (the subcommands),
:mod:`.wsgi`, :mod:`.compute` and :mod:`.neutron_standin` (entry points of
the processes it starts).
"""
