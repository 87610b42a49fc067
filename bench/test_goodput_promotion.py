"""Equal accelerators promoted on goodput, the cost being what the counters make (a whole promotion,
about 30 s, so in `make bench`; `make test` rolls back twice the accelerators,
tests/cluster/test_goodput_and_cost.py)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import pytest
from kubernetes import client

from modelgate.api import Phase
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from testbed.traefik_gateway import TraefikGateway
from tests.cluster.test_goodput_and_cost import (
    cost_matching_the_counters,
    finished,
    goodput_rollout,
)
from tests.support.simulated import HEALTHY, simulated_serving

pytestmark = pytest.mark.bench


def test_equal_accelerators_are_promoted_and_the_cost_is_what_the_counters_make(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
    record_property: Callable[[str, object], None],
) -> None:
    incumbent = replace(HEALTHY, seed=HEALTHY.seed + 1)
    with simulated_serving(
        local_bed, api_client, namespace, traefik, HEALTHY, incumbent=incumbent, gpus=(1, 1)
    ) as scenario:
        scenario.apply(goodput_rollout(namespace, local_bed.prometheus_url, hold="8s"))
        cost = cost_matching_the_counters(scenario, deadline=time.monotonic() + 30)
        final = finished(scenario)
    assert final.phase is Phase.SUCCEEDED, final.message
    [goodput] = final.analysis
    assert goodput.value is not None and goodput.incumbent_value is not None
    record_property("candidate / incumbent goodput per accelerator", goodput.value / goodput.incumbent_value)
    record_property(
        "cost per million tokens (candidate, incumbent)",
        (
            cost.candidate.cost_per_million_tokens,
            cost.incumbent.cost_per_million_tokens,
        ),
    )
