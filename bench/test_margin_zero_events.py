"""A ratio margin with no events on either side pauses at its inconclusive deadline, naming the
metric in status.pause.metricsWithoutEvents (waits out a 12 s deadline, so in `make bench`;
`make test` passes the same service on marginIncrease, tests/cluster/test_simulated_margins.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client

from modelgate.api import ModelRolloutStatus, PauseReason, Phase
from testbed.localcluster import LocalCluster
from testbed.manifests import model_rollout
from testbed.operator_process import OperatorProcess
from testbed.traefik_gateway import TraefikGateway
from tests.cluster.test_simulated_margins import (
    FINISHED,
    RPS,
    errors_judged_by,
)
from tests.support.simulated import HEALTHY, simulated_serving

pytestmark = pytest.mark.bench


def test_a_ratio_margin_at_zero_events_pauses_at_its_deadline_naming_the_metric(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
    record_property: Callable[[str, object], None],
) -> None:
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 20}, {"setWeight": 50}],
        prometheus=local_bed.prometheus_url,
        metrics=errors_judged_by({"alpha": 0.05, "margin": 2}),
        progress_deadlines={"inconclusive": {"after": "12s", "action": "pause"}},
    )
    with simulated_serving(
        local_bed, api_client, namespace, traefik, HEALTHY, incumbent=HEALTHY, rps=RPS
    ) as scenario:
        scenario.apply(manifest)
        paused: ModelRolloutStatus = scenario.wait_for_status(
            "the inconclusive deadline's pause", lambda s: s.pause is not None or s.phase in FINISHED, 60
        )
    assert paused.pause is not None and paused.pause.reason is PauseReason.INCONCLUSIVE_DEADLINE, paused
    assert paused.pause.metrics_without_events == ("errors",)
    assert paused.current_step_index == 0 and paused.phase is Phase.PAUSED
    evidence = paused.analysis[0].sequential
    assert evidence is not None and evidence.candidate_requests > 0
    assert evidence.candidate_events == evidence.incumbent_events == 0
    record_property("candidate requests counted at the pause", evidence.candidate_requests)
