"""Issue 34's acceptance for one owner per route rule, on the bed's API server: a second rollout naming
a rule another live rollout steers holds with RouteConflict naming the owner and writes nothing, tick
after tick; once the owner ends, a newer rollout whose incumbent the route serves takes the rule over
and the ended one never writes it again, while one whose incumbent the route does not serve is held
with what the route sends each side. The route object itself is watched: every version of its weights
is recorded, so a write by the wrong rollout cannot pass unseen. No traffic is needed (the route's
writes are the point), so no model servers run: rollouts without analysis move on time alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from modelgate.api import ModelRolloutStatus, PauseReason, Phase, RouteState
from modelgate.cli.exit_codes import ExitCode
from modelgate.core import Reason
from testbed.localcluster import LocalCluster
from testbed.manifests import (
    http_route,
    model_deployment,
    model_rollout,
    model_service,
)
from testbed.operator_process import OperatorProcess
from testbed.route_kinds import HTTP_ROUTE, route_watcher
from testbed.waiting import wait_for
from tests.support.cli import modelgate
from tests.support.kube import create, get_route
from tests.support.operators import operator_events
from tests.support.scenario import Rollouts, settled

MODELS = ("chat-v1", "chat-v2", "chat-v3", "chat-v4")
Weights = tuple[int, ...]


class RouteHistory:
    """Every distinct set of weights route `chat` carried, in order (chat-v1..v4)."""

    def __init__(self, objects: client.CustomObjectsApi, namespace: str) -> None:
        self.seen: list[Weights] = []
        self.watcher = route_watcher(objects, namespace, HTTP_ROUTE, "chat")

    def record(self, weights: dict[str, int], _: Any) -> None:
        carried = tuple(weights.get(model, 0) for model in MODELS)
        if not self.seen or self.seen[-1] != carried:
            self.seen.append(carried)


@pytest.fixture
def route_history(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> Iterator[RouteHistory]:
    """Four model Deployments behind HTTPRoute chat, chat-v1 taking all traffic, its weights recorded."""
    for model in MODELS:
        create(api_client, model_deployment(model, namespace, replicas=1))
        create(api_client, model_service(model, namespace))
    create(
        api_client,
        http_route("chat", namespace, {model: 100 if model == "chat-v1" else 0 for model in MODELS}),
    )
    history = RouteHistory(client.CustomObjectsApi(api_client), namespace)
    history.watcher.follow(history.record)
    try:
        yield history
    finally:
        history.watcher.stop()


def rollout(name: str, namespace: str, sides: tuple[str, str], steps: list[dict[str, Any]]) -> dict[str, Any]:
    incumbent, candidate = sides
    return model_rollout(name, namespace, steps=steps, incumbent=incumbent, candidate=candidate)


def route_version(api_client: client.ApiClient, namespace: str) -> str:
    return str(get_route(api_client, namespace, "chat")["metadata"]["resourceVersion"])


def ticks_without_a_write(
    kubeconfig: Path, api_client: client.ApiClient, rollouts: Rollouts, name: str
) -> None:
    """Three ticks of rollout `name`, each asked for at once by a `modelgate resume`, which returns once
    a tick handled it (a claim is no pause a command ends: ignored); the route is not written meanwhile."""
    version = route_version(api_client, rollouts.namespace)
    for _ in range(3):
        done = modelgate(kubeconfig, "resume", name, "-n", rollouts.namespace)
        assert done.returncode == ExitCode.IGNORED, done.stdout + done.stderr
    assert route_version(api_client, rollouts.namespace) == version


def route_state_reached(rollouts: Rollouts, name: str, state: RouteState) -> ModelRolloutStatus:
    return rollouts.wait_for_status(
        f"{name}: {state}", lambda s: s.route_state is state, timeout=30, name=name
    )


def event_reasons(api_client: client.ApiClient, namespace: str, name: str) -> list[str]:
    return [event["reason"] for event in operator_events(api_client, namespace).get(name, [])]


def test_one_owner_per_rule_held_then_handed_over(
    api_client: client.ApiClient, namespace: str, operator: OperatorProcess, route_history: RouteHistory
) -> None:
    rollouts = Rollouts(api_client, namespace)
    rollouts.apply(rollout("chat", namespace, ("chat-v1", "chat-v2"), [{"setWeight": 50}, {"pause": {}}]))
    rollouts.wait_for_status("chat at 50", settled(Phase.PAUSED), name="chat")

    # A second rollout on the same rule while chat steers it: held, naming chat, and writing nothing.
    rollouts.apply(rollout("chat-again", namespace, ("chat-v1", "chat-v3"), [{"setWeight": 20}]))
    held = route_state_reached(rollouts, "chat-again", RouteState.CLAIMED)
    assert held.route_owner is not None and held.route_owner.name == "chat"
    assert held.pause is not None and held.pause.reason is PauseReason.ROUTE_CLAIMED
    assert held.phase is Phase.PENDING and held.current_weight == 0
    ticks_without_a_write(operator.kubeconfig, api_client, rollouts, "chat-again")
    assert event_reasons(api_client, namespace, "chat-again").count(Reason.ROUTE_CONFLICT.value) == 1

    # chat ends; chat-again's incumbent (chat-v1) is not what the route serves now (chat-v2).
    assert modelgate(operator.kubeconfig, "promote", "chat", "--full", "-n", namespace).returncode == 0
    rollouts.wait_for_status("chat succeeded", settled(Phase.SUCCEEDED), name="chat")
    # Ticks asked for at once (each would come by itself within the 10 s recheck of a held rollout).
    ticks_without_a_write(operator.kubeconfig, api_client, rollouts, "chat-again")
    not_served = route_state_reached(rollouts, "chat-again", RouteState.INCUMBENT_NOT_SERVED)
    assert "chat-v1" in (not_served.message or "") and "spec.incumbent" in (not_served.message or "")

    # A newer rollout from what chat promoted takes the rule over; chat writes it no more.
    rollouts.apply(rollout("chat-next", namespace, ("chat-v2", "chat-v4"), [{"setWeight": 50}]))
    rollouts.wait_for_status("chat-next succeeded", settled(Phase.SUCCEEDED), name="chat-next")
    ticks_without_a_write(operator.kubeconfig, api_client, rollouts, "chat")  # retired: writes nothing
    handed = route_state_reached(rollouts, "chat", RouteState.HANDED_OVER)
    assert handed.phase is Phase.SUCCEEDED and handed.route_owner is not None
    assert handed.route_owner.name == "chat-next"

    wait_for(lambda: route_history.seen[-1] == (0, 0, 0, 100), timeout=10, what="the route's last write seen")
    assert route_history.seen == [
        (100, 0, 0, 0),  # as created
        (50, 50, 0, 0),  # chat's step
        (0, 100, 0, 0),  # chat promoted
        (0, 50, 0, 50),  # chat-next's step, from chat-v2
        (0, 0, 0, 100),  # chat-next promoted
    ]
    assert rollouts.status("chat-again").current_weight == 0
