"""What a rollout stands on, taken away mid-rollout: the candidate Deployment deleted or scaled to 0
(the step holds with CandidateAvailable=False and goes on once it is back), the HTTPRoute deleted
(Failed with RouteNotFound; `modelgate retry` once it is back). Meanwhile the operator neither
crashes nor spins: it looks at the rollout on a resync or an event, not in a loop."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from enum import Enum

from kubernetes import client

from modelgate.api import ConditionStatus, ModelRolloutStatus, Phase
from modelgate.core import ConditionType, Reason
from modelgate.core.stepping import RESYNC
from testbed.manifests import GATEWAY_GROUP, GATEWAY_VERSION, http_route, model_deployment
from testbed.operator_process import OperatorProcess
from tests.support.faults.common import (
    TIMED_WEIGHTS,
    plain_rollout_at_step,
    send_command,
    timed_steps,
    wait_phase,
    wait_status,
)
from tests.support.kube import create, rollout_status

# This rollout's ticks only: the session's operator also resyncs rollouts other tests left behind.
TICKS = "modelgate_rollout_reconciles_total"
# Ticks the removal's own watch events may cause (a Deployment scaled down changes its status a few
# times); a rollout in a loop would tick 5 times a second.
EVENT_TICKS = 6


StatusCheck = Callable[[ModelRolloutStatus], bool]


class Removal(Enum):
    CANDIDATE_DELETED = "the candidate Deployment deleted"
    CANDIDATE_SCALED_TO_ZERO = "the candidate Deployment scaled to 0"
    ROUTE_DELETED = "the HTTPRoute deleted"


def _candidate_held(status: ModelRolloutStatus, what: str) -> bool:
    available = next((c for c in status.conditions if c.type == ConditionType.CANDIDATE_AVAILABLE), None)
    return (
        status.phase is Phase.PROGRESSING
        and status.current_step_index == 1
        and available is not None
        and available.status is ConditionStatus.FALSE
        and what in available.message
        and "holding" in (status.message or "")
    )


def _route_failed(status: ModelRolloutStatus) -> bool:
    ready = next((c for c in status.conditions if c.type == ConditionType.ROUTE_READY), None)
    return status.phase is Phase.FAILED and ready is not None and ready.reason == Reason.ROUTE_NOT_FOUND


def _remove(
    api_client: client.ApiClient, namespace: str, removal: Removal
) -> Callable[[ModelRolloutStatus], bool]:
    """Takes the thing away; returns how the rollout's status must show it."""
    apps = client.AppsV1Api(api_client)
    if removal is Removal.CANDIDATE_DELETED:
        apps.delete_namespaced_deployment("chat-v2", namespace)
        return lambda status: _candidate_held(status, "not found")
    if removal is Removal.CANDIDATE_SCALED_TO_ZERO:
        apps.patch_namespaced_deployment_scale("chat-v2", namespace, {"spec": {"replicas": 0}})
        return lambda status: _candidate_held(status, "scaled to zero")
    client.CustomObjectsApi(api_client).delete_namespaced_custom_object(
        GATEWAY_GROUP, GATEWAY_VERSION, namespace, "httproutes", "chat"
    )
    return _route_failed


def _restore(api_client: client.ApiClient, namespace: str, removal: Removal) -> None:
    if removal is Removal.CANDIDATE_DELETED:
        create(api_client, model_deployment("chat-v2", namespace, replicas=1))
    elif removal is Removal.CANDIDATE_SCALED_TO_ZERO:
        client.AppsV1Api(api_client).patch_namespaced_deployment_scale(
            "chat-v2", namespace, {"spec": {"replicas": 1}}
        )
    else:
        create(api_client, http_route("chat", namespace, {"chat-v1": 100, "chat-v2": 0}))
        send_command(api_client, namespace, "chat", "retry", "route-restored")


def removed_mid_rollout(
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    removal: Removal,
    *,
    held_seconds: float,
    pause_seconds: float = 3,
) -> dict[str, float | str]:
    """Takes the thing away during the first pause and leaves the rollout alone for `held_seconds`
    past the pause's end: its status says what is missing, and the operator looks at it on a resync
    or an event (not in a loop) and logs no error. Then brings the thing back: the rollout succeeds
    (after `modelgate retry`, for the route), its weights as the steps say."""
    ours = {"namespace": namespace, "rollout": "chat"}
    with plain_rollout_at_step(api_client, namespace, timed_steps(pause_seconds)) as recorder:
        shown = _remove(api_client, namespace, removal)
        reported = wait_status(api_client, namespace, "chat", shown, f"reporting {removal.value}")
        ticks_before, watched_from = operator.counter(TICKS, **ours), time.monotonic()
        time.sleep(pause_seconds + held_seconds)  # the rollout left alone, past its pause's end
        window = time.monotonic() - watched_from
        ticks = operator.counter(TICKS, **ours) - ticks_before
        held = rollout_status(api_client, namespace, "chat")
        assert shown(held), held
        # The resyncs that fall in the window (one more than whole periods: it need not start on one),
        # the pause's scheduled end, and the removal's own events; a loop would tick 5 times a second.
        resyncs = math.floor(window / RESYNC.total_seconds()) + 1
        assert ticks <= resyncs + 1 + EVENT_TICKS, f"{ticks:g} ticks in {window:.1f}s: {removal.value}"
        assert operator.process is not None and operator.registry.is_running(operator.process)
        errors = [
            r for r in operator.log_records() if r.get("namespace") == namespace and r.get("level") == "error"
        ]
        assert not errors, errors

        restored_at = time.time()
        _restore(api_client, namespace, removal)
        final = wait_phase(api_client, namespace, "chat", (Phase.SUCCEEDED,), timeout=4 * pause_seconds + 60)
        assert final.current_weight == 100
        # A deleted route comes back at 0, and the rollout starts again from step 0.
        after = restored_at if removal is Removal.ROUTE_DELETED else 0
        assert recorder.candidate_weights(after=after) == TIMED_WEIGHTS
    return {"ticks_per_second_held": ticks / window, "reported": reported.message or ""}
