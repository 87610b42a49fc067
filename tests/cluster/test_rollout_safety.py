"""How a rollout backs out and holds: a gradual rollback that a breach cuts short, deletion that
returns traffic only when asked (and never waits on the operator otherwise), capacity before weight."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import ConditionStatus, Phase
from modelgate.commands import COMMAND_ANNOTATION, encode_command
from modelgate.core import CommandAction, ConditionType, Reason
from modelgate.core.actions import FINALIZER
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.kube import route_weights
from tests.support.operators import admin_operator_stopped, operator_events
from tests.support.scenario import Rollouts, Watcher, serving, settled

HOLD: list[dict[str, Any]] = [{"setWeight": 50}, {"pause": {}}]


def _objects(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


def _patch(api_client: client.ApiClient, namespace: str, name: str, body: dict[str, Any]) -> None:
    _objects(api_client).patch_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, name, body)


def _abort(api_client: client.ApiClient, namespace: str, name: str = "chat") -> None:
    command = encode_command(CommandAction.ABORT)
    _patch(api_client, namespace, name, {"metadata": {"annotations": {COMMAND_ANNOTATION: command}}})


def _finalizers(rollouts: Rollouts, name: str = "chat") -> list[str]:
    return list(rollouts.rollout(name)["metadata"].get("finalizers") or [])


def _delete_and_wait_gone(rollouts: Rollouts, name: str = "chat") -> None:
    _objects(rollouts.api_client).delete_namespaced_custom_object(
        API_GROUP, API_VERSION, rollouts.namespace, PLURAL, name
    )

    def gone() -> bool:
        try:
            rollouts.rollout(name)
        except ApiException as error:
            if error.status == 404:
                return True
            raise
        return False

    wait_for(gone, timeout=30, what=f"ModelRollout {name} to be deleted")


def _scale(api_client: client.ApiClient, namespace: str, deployment: str, replicas: int) -> None:
    apps = client.AppsV1Api(api_client)
    apps.patch_namespaced_deployment_scale(deployment, namespace, {"spec": {"replicas": replicas}})

    def ready() -> bool:
        status = apps.read_namespaced_deployment_status(deployment, namespace).status
        return bool(status.ready_replicas == replicas)

    wait_for(ready, timeout=60, what=f"{replicas} Ready replicas of {deployment}")


def test_a_gradual_rollback_steps_down_until_a_breach_sets_0(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    manifest = model_rollout(
        "chat",
        namespace,
        steps=HOLD,
        prometheus=local_bed.prometheus_url,
        metrics=SEED_METRICS,
        interval="1s",
        rollback={"gradual": {"duration": "60s"}},
    )
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)
        scenario.wait_for_status("the hold at 50", settled(Phase.PAUSED))
        _abort(api_client, namespace)
        rolling = scenario.wait_for_status(
            "a step down", lambda s: s.rolling_back is not None and 0 < (s.live_weight or 0) < 50
        )
        assert rolling.phase is Phase.ROLLED_BACK and rolling.rollback_reason is not None
        assert rolling.rolling_back is not None and rolling.rolling_back.from_weight == 50
        ends_at = rolling.rolling_back.ends_at

        scenario.fleet.set_behaviour("chat-v2", Behaviour(error_rate=0.5))
        final = scenario.wait_for_status("the breach", lambda s: s.rolling_back is None)
        assert final.rollback_reason is not None and final.rollback_reason.metric == "error-rate"
        weights = scenario.recorder.weights_until(0)
        stepped = weights[2:-1]  # between the hold at 50 and the final 0
        assert weights[:2] == [0, 50] and stepped, weights
        assert stepped == sorted(stepped, reverse=True) and all(0 < w < 50 for w in stepped), weights
        zero_at = scenario.recorder.first_time_at(0, after=rolling.rolling_back.started_at.timestamp())
        assert zero_at is not None and datetime.fromtimestamp(zero_at, UTC) < ends_at  # cut short


def test_deleting_a_return_traffic_rollout_returns_the_weight_to_the_incumbent(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    manifest = model_rollout("chat", namespace, steps=HOLD, rollback={"onDelete": "ReturnTraffic"})
    with serving(local_bed, api_client, namespace, Behaviour(), rps=5) as scenario:
        scenario.apply(manifest)
        scenario.wait_for_status("the hold at 50", settled(Phase.PAUSED))
        wait_for(lambda: _finalizers(scenario) == [FINALIZER], timeout=10, what="the finalizer")
        _delete_and_wait_gone(scenario)
        assert route_weights(api_client, namespace, "chat") == {"chat-v1": 100, "chat-v2": 0}
        assert scenario.recorder.candidate_weights() == [0, 50, 0]
        reasons = [event["reason"] for event in operator_events(api_client, namespace).get("chat", [])]
        assert Reason.TRAFFIC_RETURNED in reasons


def test_deletion_never_waits_on_the_operator_without_return_traffic(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    """`plain` never asks for ReturnTraffic and never carries a finalizer (kopf's included), as every
    version of it the API server showed says; `switched` has ours until onDelete goes back to Leave.
    Both are deleted with no operator running."""
    seen_finalizers: list[tuple[str, list[str]]] = []

    def record(_: float, rollout: dict[str, Any]) -> None:
        meta = rollout["metadata"]
        seen_finalizers.append((meta["name"], list(meta.get("finalizers") or [])))

    watcher = Watcher(_objects(api_client), namespace, (API_GROUP, API_VERSION, PLURAL), record)
    watcher.start()
    try:
        with serving(local_bed, api_client, namespace, Behaviour(), rps=5) as scenario:
            scenario.apply(model_rollout("plain", namespace, steps=HOLD))
            # Its route does not exist: Failed, which keeps the finalizer (weights are left as they are).
            switched = model_rollout(
                "switched", namespace, steps=HOLD, route="nowhere", rollback={"onDelete": "ReturnTraffic"}
            )
            scenario.apply(switched)
            scenario.wait_for_status("the hold at 50", settled(Phase.PAUSED), name="plain")
            wait_for(lambda: _finalizers(scenario, "switched") == [FINALIZER], timeout=30, what="a finalizer")
            _patch(api_client, namespace, "switched", {"spec": {"rollback": {"onDelete": "Leave"}}})
            wait_for(lambda: not _finalizers(scenario, "switched"), timeout=30, what="no finalizer")
            assert scenario.status("switched").phase is Phase.FAILED

            with admin_operator_stopped(operator):
                _delete_and_wait_gone(scenario, "plain")
                _delete_and_wait_gone(scenario, "switched")
                assert route_weights(api_client, namespace, "chat") == {"chat-v1": 50, "chat-v2": 50}
    finally:
        watcher.stop()
    plain = [finalizers for name, finalizers in seen_finalizers if name == "plain"]
    assert plain and not any(plain), plain


def test_a_step_waits_for_the_candidates_ready_replicas(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    steps = [{"setWeight": 60}, {"pause": {}}]
    manifest = model_rollout("chat", namespace, steps=steps)
    manifest["spec"]["capacity"] = {"enforce": True}
    with serving(local_bed, api_client, namespace, Behaviour(), rps=5) as scenario:
        _scale(api_client, namespace, "chat-v1", 4)  # 60% of 4 Ready needs 3; the candidate has 2
        scenario.apply(manifest)

        def capacity(status: Any) -> Any:
            return next((c for c in status.conditions if c.type == ConditionType.CANDIDATE_CAPACITY), None)

        waiting = scenario.wait_for_status("the wait", lambda s: capacity(s) is not None)
        held = capacity(waiting)
        assert held.status is ConditionStatus.FALSE and held.reason == Reason.INSUFFICIENT_CAPACITY
        assert "60% needs 3 Ready candidate replicas" in held.message and "has 2" in held.message
        assert waiting.phase is Phase.PROGRESSING and waiting.current_weight == 0
        reasons = [event["reason"] for event in operator_events(api_client, namespace).get("chat", [])]
        assert Reason.INSUFFICIENT_CAPACITY in reasons

        _scale(api_client, namespace, "chat-v2", 3)
        raised = scenario.wait_for_status("the weight", settled(Phase.PAUSED))
        assert raised.current_weight == 60 and capacity(raised).status is ConditionStatus.TRUE
        assert scenario.recorder.weights_until(60) == [0, 60]
