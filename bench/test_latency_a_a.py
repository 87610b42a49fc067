"""An A/A rollout judged by a latency comparison with confidence (ttftP99 bounded from the simulator's
histogram buckets, margin 1.5) is promoted three times out of three. In `make bench`: three rollouts of
about half a minute each. `make test` runs the rollback on the same buckets
(tests/cluster/test_latency_confidence.py) and bounds A/A false rollbacks by alpha in simulation
(tests/unit/test_quantile_bounds.py); its own A/A rollout moved here (bench/REPORT.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client

from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from testbed.traefik_gateway import TraefikGateway
from tests.support.latency_rollouts import a_a_rollout_promoted

pytestmark = pytest.mark.bench


@pytest.mark.parametrize("run", [1, 2, 3])
def test_an_a_a_latency_rollout_is_promoted(
    run: int,
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
    record_property: Callable[[str, object], None],
) -> None:
    """Each run with seeds of its own: noise alone must not roll a candidate back, nor keep it from
    passing the margin."""
    a_a_rollout_promoted(local_bed, api_client, namespace, traefik, 10 * run, record_property)
