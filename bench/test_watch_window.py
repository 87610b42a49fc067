"""The watch window after promotion (spec.watch): a candidate that stays healthy ends Succeeded after
it, with the incumbent scaled to 0; one whose pod degrades ten seconds into it is rolled back inside
it, and the rollback names that pod and trace IDs that pod really served with an error."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from kubernetes import client

from modelgate.api import ModelRolloutStatus, Phase
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.scenario import Scenario, serving

# A minute or more each on the bed: run by `make bench`, beside the demo (docs/testing.md).
pytestmark = pytest.mark.bench

FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)
ERROR_RATE_MAX = 0.01


def watched_rollout(bed: LocalCluster, namespace: str, watch: dict[str, Any]) -> dict[str, Any]:
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 50}],
        prometheus=bed.prometheus_url,
        metrics=SEED_METRICS,
        interval="1s",
    )
    manifest["spec"]["watch"] = watch
    return manifest


def window_opened(scenario: Scenario) -> ModelRolloutStatus:
    return scenario.wait_for_status(
        "the watch window", lambda s: s.watch_ends_at is not None or s.phase in FINISHED
    )


def test_a_healthy_candidate_succeeds_after_the_window_and_the_incumbent_is_scaled_down(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    apps = client.AppsV1Api(api_client)
    manifest = watched_rollout(local_bed, namespace, {"duration": "5s", "scaleDownIncumbent": True})
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)
        watching = window_opened(scenario)
        assert watching.phase is Phase.PROGRESSING and watching.current_weight == 100, watching.message
        assert apps.read_namespaced_deployment("chat-v1", namespace).spec.replicas == 2
        final = scenario.wait_for_status("the end", lambda s: s.phase in FINISHED)
        assert final.phase is Phase.SUCCEEDED, final.message
        # Succeeded when the window had passed (the status's own clock), not before.
        assert watching.watch_ends_at is not None and final.step_started_at is not None
        assert final.step_started_at >= watching.watch_ends_at
        assert final.analysis and final.last_analysis_at is not None
        assert final.last_analysis_at > watching.step_started_at + timedelta(seconds=3)  # judged in it
        wait_for(
            lambda: apps.read_namespaced_deployment("chat-v1", namespace).spec.replicas == 0,
            timeout=10,
            what="the incumbent scaled to 0",
        )
        assert scenario.recorder.weights_until(100) == [0, 50, 100]


def test_a_pod_that_degrades_in_the_window_is_rolled_back_and_named_with_its_failed_requests(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    manifest = watched_rollout(local_bed, namespace, {"duration": "2m"})
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)
        watching = window_opened(scenario)
        assert watching.watch_ends_at is not None and watching.step_started_at is not None
        # Ten seconds of passing analysis at 100%, by the status's clock, then one pod goes bad.
        degrade_after = watching.step_started_at + timedelta(seconds=10)
        scenario.wait_for_status(
            "ten seconds of analysis in the window",
            lambda s: (
                s.phase in FINISHED
                or (s.last_analysis_at is not None and s.last_analysis_at >= degrade_after)
            ),
        )
        bad_pod, good_pod = (d.pod for d in scenario.fleet.doubles if d.deployment == "chat-v2")
        scenario.fleet.set_behaviour("chat-v2", Behaviour(error_rate=0.5), pod=bad_pod)

        final = scenario.wait_for_status("the end", lambda s: s.phase in FINISHED)
        assert final.phase is Phase.ROLLED_BACK, final.message
        reason = final.rollback_reason
        assert reason is not None and reason.metric == "error-rate"
        assert degrade_after <= reason.time < watching.watch_ends_at
        assert scenario.recorder.weights_until(0) == [0, 50, 100, 0]

        # Is one pod bad, or all? The bad one first, above the threshold; the other below it.
        by_pod = {p.pod: p.value for p in reason.pods}
        assert reason.pods[0].pod == bad_pod and set(by_pod) == {bad_pod, good_pod}
        assert (by_pod[bad_pod] or 0) > ERROR_RATE_MAX > (by_pod[good_pod] or 0)
        # The requests behind it: trace IDs the bad pod's double served with a 500.
        failed = {trace for trace, status in scenario.fleet.served(bad_pod) if status == 500}
        assert reason.traces, "no trace IDs recorded for the breach"
        for trace in reason.traces:
            assert trace.pod == bad_pod and trace.trace_id in failed
