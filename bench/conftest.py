"""Benchmarks share the suite's fixtures (the local bed, the operator process)."""

from tests.conftest import api_client, cluster, local_bed, namespace, operator  # noqa: F401
