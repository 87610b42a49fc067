"""Benchmarks share the suite's fixtures (the local bed, the operator process)."""

from tests.conftest import (  # noqa: F401
    api_client,
    cluster,
    local_bed,
    namespace,
    operator,
    operator_scraped,
    prometheus_restarted,
    traefik,
)
