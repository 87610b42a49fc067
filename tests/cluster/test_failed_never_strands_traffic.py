"""Failed never strands traffic (issue 21): a command annotation that is not a command, and a query
that cannot be built once the candidate has traffic, leave the rollout judging; a later breach still
rolls back to weight 0. Before, each set Failed with the candidate's weight left where it was and no
more analysis."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import CommandResult, Phase
from modelgate.commands import COMMAND_ANNOTATION
from modelgate.core import Reason
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.kube import route_weights
from tests.support.operators import operator_events
from tests.support.scenario import Scenario, serving

HOLD: list[dict[str, Any]] = [{"setWeight": 20}, {"pause": {}}]
BREACH = Behaviour(error_rate=0.5)


def held_rollout(bed: LocalCluster, namespace: str) -> dict[str, Any]:
    return model_rollout(
        "chat",
        namespace,
        steps=HOLD,
        prometheus=bed.prometheus_url,
        metrics=SEED_METRICS,
        interval="1s",
        rollback={"onPrometheusError": "pause", "maxConsecutiveErrors": 2},
    )


def patch_rollout(api_client: client.ApiClient, namespace: str, body: dict[str, Any]) -> None:
    client.CustomObjectsApi(api_client).patch_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, PLURAL, "chat", body
    )


def hold_at_20(scenario: Scenario) -> None:
    scenario.wait_for_status(
        "the rollout to hold at 20", lambda s: s.phase is Phase.PAUSED and s.live_weight == 20
    )


def breach_rolls_back(scenario: Scenario, api_client: client.ApiClient, namespace: str) -> None:
    """The candidate starts failing half its requests: the rollout, still judging, returns its traffic."""
    scenario.fleet.set_behaviour("chat-v2", BREACH)
    final = scenario.wait_for_status(
        "the rollout to end", lambda s: s.phase in (Phase.ROLLED_BACK, Phase.FAILED, Phase.SUCCEEDED)
    )
    assert final.phase is Phase.ROLLED_BACK, final.message
    assert final.rollback_reason is not None and final.rollback_reason.metric == "error-rate"
    assert route_weights(api_client, namespace, "chat") == {"chat-v1": 100, "chat-v2": 0}


def test_a_command_annotation_that_is_not_a_command_is_ignored_and_the_rollout_goes_on(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(held_rollout(local_bed, namespace))
        hold_at_20(scenario)
        patch_rollout(api_client, namespace, {"metadata": {"annotations": {COMMAND_ANNOTATION: "promote"}}})

        def ignored() -> bool:
            last = scenario.status().last_command
            return last is not None and last.result is CommandResult.IGNORED

        wait_for(ignored, timeout=30, what="the annotation to be ignored")
        warnings = [
            event
            for event in operator_events(api_client, namespace).get("chat", [])
            if event["reason"] == Reason.COMMAND_IGNORED.value and event["type"] == "Warning"
        ]
        assert warnings and COMMAND_ANNOTATION in warnings[0]["note"]
        wait_for(
            lambda: COMMAND_ANNOTATION not in (scenario.rollout()["metadata"].get("annotations") or {}),
            timeout=30,
            what="the operator to remove the annotation",
        )
        assert scenario.status().phase is Phase.PAUSED
        breach_rolls_back(scenario, api_client, namespace)


def test_a_query_that_cannot_be_built_once_the_candidate_has_traffic_holds_and_judges_the_rest(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(held_rollout(local_bed, namespace))
        hold_at_20(scenario)
        unbuildable = {"name": "broken", "query": "up{pod=~'{{ model }}'}", "max": 1}
        metrics = [*SEED_METRICS, unbuildable]
        patch_rollout(api_client, namespace, {"spec": {"analysis": {"metrics": metrics}}})

        def held_on_the_check() -> str | None:
            """The unbuildable query's error, once the check after the edit has recorded it."""
            status = scenario.status()
            assert status.phase is not Phase.FAILED, status.message
            check = status.analysis_check
            unanswered = [q for q in check.unanswered if q.metric == "broken"] if check is not None else []
            return unanswered[0].error if unanswered else None

        error = wait_for(held_on_the_check, timeout=60, what="the edit's check to name the unbuildable query")
        assert "spec.analysis.metrics[3].query" in error, error
        status = scenario.status()
        assert (status.phase, status.live_weight) == (Phase.PAUSED, 20)  # held where it was
        breach_rolls_back(scenario, api_client, namespace)
