"""No traffic without a working judge, and missing data that says what is missing (issue 22, items
6 and 7): a rollout whose Prometheus cannot be reached keeps its candidate at weight 0 (a watch on
the HTTPRoute sees nothing else) and names the metric, the address and the error, then goes on once
its spec points at a Prometheus that answers; a refusalRate rollout without the refusal sidecar names
the series nobody exports and who would, and pauses at its inconclusive deadline."""

from __future__ import annotations

from kubernetes import client

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import ModelRolloutStatus, Phase
from modelgate.api.series import SeriesComponent
from modelgate.core import ConditionType, Reason
from modelgate.core.reasons import condition
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.ports import free_port
from tests.support.scenario import serving, settled

STEPS = [{"setWeight": 20}, {"setWeight": 100}]
CHECKS_WATCHED = 3  # checks seen failing (one per interval) while the route is watched


def unanswered(status: ModelRolloutStatus) -> bool:
    ready = condition(status.conditions, ConditionType.ANALYSIS_READY)
    return ready is not None and ready.reason == Reason.QUERY_UNANSWERED


def test_an_unreachable_prometheus_keeps_the_candidate_at_zero_and_says_why(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    nowhere = f"http://127.0.0.1:{free_port()}"  # claimed, never bound: nothing listens there
    manifest = model_rollout(
        "chat", namespace, steps=STEPS, prometheus=nowhere, metrics=SEED_METRICS, interval="1s"
    )
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)
        checks_seen = set()

        def failing_checks(status: ModelRolloutStatus) -> bool:
            if unanswered(status) and status.analysis_check is not None:
                checks_seen.add(status.analysis_check.at)
            return len(checks_seen) >= CHECKS_WATCHED

        held = scenario.wait_for_status(f"{CHECKS_WATCHED} failed checks", failing_checks, timeout=60)
        assert (held.phase, held.current_weight) == (Phase.PENDING, 0)
        assert scenario.recorder.candidate_weights() == [0], "the candidate got traffic with no judge"
        check = held.analysis_check
        assert check is not None and check.address == nowhere
        assert {q.metric for q in check.unanswered} >= {m["name"] for m in SEED_METRICS}
        assert all(nowhere in q.error for q in check.unanswered)
        ready = condition(held.conditions, ConditionType.ANALYSIS_READY)
        assert ready is not None and ready.status == "False"
        assert nowhere in ready.message and SEED_METRICS[0]["name"] in ready.message
        assert "spec.analysis.prometheus.address" in (held.message or "")

        address = {"spec": {"analysis": {"prometheus": {"address": local_bed.prometheus_url}}}}
        client.CustomObjectsApi(api_client).patch_namespaced_custom_object(
            API_GROUP, API_VERSION, namespace, PLURAL, "chat", address
        )
        done = scenario.wait_for_status("success once the queries answer", settled(Phase.SUCCEEDED))
        ready = condition(done.conditions, ConditionType.ANALYSIS_READY)
        assert ready is not None and ready.reason == Reason.QUERIES_ANSWERED
        assert scenario.recorder.weights_until(100) == [0, 20, 100]


def test_a_refusal_rate_without_the_sidecar_names_the_missing_series_and_pauses_at_its_deadline(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    manifest = model_rollout(
        "chat",
        namespace,
        steps=STEPS,
        prometheus=local_bed.prometheus_url,
        metrics=[{"name": "refusals", "preset": "refusalRate", "max": 0.05}],
        interval="1s",
        progress_deadlines={"inconclusive": {"after": "6s", "action": "pause"}},
    )
    with serving(local_bed, api_client, namespace, Behaviour(), refusal_sidecar=False) as scenario:
        scenario.apply(manifest)
        paused = scenario.wait_for_status("a pause at the deadline", lambda s: s.phase is Phase.PAUSED)
        health = condition(paused.conditions, ConditionType.ANALYSIS_HEALTHY)
        assert health is not None and health.reason == Reason.PROGRESS_DEADLINE_EXCEEDED
        assert paused.current_weight == 20
        (refusals,) = paused.analysis
        missing = {m.series: m for m in refusals.missing_series}
        assert set(missing) == {"llm_requests_total", "llm_refusals_total"}
        assert {m.provided_by for m in missing.values()} == {SeriesComponent.REFUSAL_SIDECAR}
        assert all(set(m.sides) == {"candidate", "incumbent"} for m in missing.values())
        assert "llm_requests_total" in (paused.message or "")
        assert scenario.recorder.candidate_weights() == [0, 20]
