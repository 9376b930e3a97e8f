"""Functional test base: the demo's embedded Nova, one per test."""

from opie_sched.demo import cloud

HOST = cloud.HOST
PAPER_FLAVORS = cloud.PAPER_FLAVORS
OPIE_MANAGER = cloud.OPIE_MANAGER
NOVA_MANAGER = cloud.NOVA_MANAGER


class OpieNovaTestCase(cloud.OpieNovaTestCase):
    """Run as a test: nova's TestCase machinery does the rest."""
