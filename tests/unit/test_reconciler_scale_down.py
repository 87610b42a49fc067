"""spec.watch.scaleDownIncumbent, against an in-memory API: once the window has passed the incumbent
is scaled to 0 (a ScaledDown Event); a refusal (the chart did not grant deployments/scale) is a
ScaleDownFailed Warning naming the cause, and the rollout is Succeeded all the same."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any, cast

import pytest

from modelgate.api import ModelRolloutStatus, WorkloadRef
from modelgate.kube import Kube, KubeError
from modelgate.reconciler import Reconciler
from testbed.manifests import http_route, model_rollout
from tests.unit.test_reconciler_write_order import NOW, InMemoryKube

FORBIDDEN = 'deployments.apps "chat-v1" is forbidden: cannot patch resource "deployments/scale"'


class ScalingKube(InMemoryKube):
    def __init__(self, rollout: dict[str, Any], route: dict[str, Any], *, may_scale: bool) -> None:
        super().__init__(rollout, route)
        self.may_scale = may_scale
        self.scaled: list[tuple[str, int]] = []
        self.events: list[tuple[str, str, str]] = []

    def scale_side(self, namespace: str, side: WorkloadRef, replicas: int) -> None:
        if not self.may_scale:
            raise KubeError(403, FORBIDDEN)
        self.scaled.append((side.name, replicas))

    def create_event(self, _: Any, type_: str, reason: str, message: str, *__: Any, **___: Any) -> Any:
        self.events.append((type_, reason, message))
        return {}


def window_just_passed(*, may_scale: bool) -> ScalingKube:
    rollout = model_rollout(
        "chat",
        "serving",
        steps=[{"setWeight": 50}],
        prometheus="http://127.0.0.1:9",
        metrics=[{"name": "error-rate", "preset": "errorRate", "max": 0.01}],
    )
    rollout["spec"]["watch"] = {"duration": "1m", "scaleDownIncumbent": True}
    status = ModelRolloutStatus.model_validate(
        {
            "phase": "Progressing",
            "observedGeneration": 1,
            "rolloutCandidate": "chat-v2",
            "currentStepIndex": 1,
            "currentWeight": 100,
            "liveWeight": 100,
            "stepStartedAt": (NOW - timedelta(minutes=1)).isoformat(),
            "watchEndsAt": NOW.isoformat(),
            "lastAnalysisAt": NOW.isoformat(),  # nothing due: the window's end alone decides
        }
    )
    rollout["metadata"].update(generation=1, resourceVersion="7", annotations={})
    rollout["status"] = status.to_patch()
    route = http_route("chat", "serving", {"chat-v1": 0, "chat-v2": 100})
    route["metadata"]["resourceVersion"] = "3"
    return ScalingKube(rollout, route, may_scale=may_scale)


@pytest.mark.parametrize("may_scale", [True, False])
def test_the_incumbent_is_scaled_down_once_the_window_has_passed(may_scale: bool) -> None:
    kube = window_just_passed(may_scale=may_scale)
    Reconciler(cast(Kube, kube), clock=lambda: NOW).tick(copy.deepcopy(kube.rollout))
    assert kube.rollout["status"]["phase"] == "Succeeded"
    reasons = [(type_, reason) for type_, reason, _ in kube.events]
    if may_scale:
        assert kube.scaled == [("chat-v1", 0)] and ("Normal", "ScaledDown") in reasons
    else:
        failed = [message for _, reason, message in kube.events if reason == "ScaleDownFailed"]
        assert ("Warning", "ScaleDownFailed") in reasons and FORBIDDEN in failed[0]


def test_an_incumbent_of_another_kind_is_scaled_through_its_own_scale_naming_its_kind() -> None:
    kube = window_just_passed(may_scale=True)
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "name": "chat-v1"}
    kube.rollout["spec"]["incumbent"] = {"workload": lws}
    Reconciler(cast(Kube, kube), clock=lambda: NOW).tick(copy.deepcopy(kube.rollout))
    assert kube.scaled == [("chat-v1", 0)]
    [message] = [message for _, reason, message in kube.events if reason == "ScaledDown"]
    assert "incumbent LeaderWorkerSet chat-v1 scaled to 0" in message
