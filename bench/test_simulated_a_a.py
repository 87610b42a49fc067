"""An A/A rollout, the same simulator flags on both sides, is promoted three times out of three: llm-d's
vLLM simulator serves both, Traefik splits the requests, and only noise tells the sides apart. The
simulator, not our double: its latencies are drawn by its own code. In `make bench`: a minute and a
half of rollouts; `make test` promotes one A/A candidate (test_simulated_promotion.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from kubernetes import client

from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from testbed.traefik_gateway import TraefikGateway
from tests.support.simulated import HEALTHY, promote, simulated_serving

pytestmark = pytest.mark.bench


@pytest.mark.parametrize("run", [1, 2, 3])
def test_an_a_a_rollout_is_promoted(
    run: int,
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
    record_property: Callable[[str, object], None],
) -> None:
    """The same simulator flags on both sides, each side and each run with a seed of its own: noise
    alone must not roll a candidate back."""
    candidate, incumbent = replace(HEALTHY, seed=2 * run), replace(HEALTHY, seed=2 * run + 1)
    with simulated_serving(
        local_bed, api_client, namespace, traefik, candidate, incumbent=incumbent, rps=60
    ) as scenario:
        promote(scenario, local_bed.prometheus_url, [30, 60], record_property)
