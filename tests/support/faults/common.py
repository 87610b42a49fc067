"""What the fault scenarios share: rollouts without analysis between chat-v1 and chat-v2 (see
tests.support.kube.create_model_routes), and waiting for one to finish."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from kubernetes import client

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import ModelRolloutStatus, Phase
from testbed.manifests import model_rollout
from testbed.waiting import WaitTimeout, wait_for
from tests.support.kube import create, create_model_routes, rollout_status
from tests.support.scenario import RouteRecorder, settled

FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)
# The weights of timed_steps, in order, from the route's initial 0.
TIMED_WEIGHTS = [0, 20, 50, 100]


def timed_steps(pause_seconds: float) -> list[dict[str, Any]]:
    pause = {"pause": {"duration": f"{pause_seconds:g}s"}}
    return [{"setWeight": 20}, pause, {"setWeight": 50}, pause, {"setWeight": 100}]


def plain_rollout(name: str, namespace: str, route: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
    """A rollout without analysis: its steps advance on time alone."""
    return model_rollout(name, namespace, steps=steps, route=route)


def wait_status(
    api_client: client.ApiClient,
    namespace: str,
    name: str,
    predicate: Callable[[ModelRolloutStatus], bool],
    what: str,
    timeout: float = 60,
) -> ModelRolloutStatus:
    """On timeout, the error tells the status last seen: what the rollout was waiting for."""
    seen: list[ModelRolloutStatus] = []

    def probe() -> ModelRolloutStatus | None:
        status = rollout_status(api_client, namespace, name)
        seen[:] = [status]
        return status if predicate(status) else None

    try:
        return wait_for(probe, timeout=timeout, what=f"rollout {namespace}/{name}: {what}")
    except WaitTimeout as error:
        if not seen:
            raise
        last = seen[0]
        raise WaitTimeout(
            f"{error}; last seen: {last.phase} at step {last.current_step_index}, weight"
            f" {last.current_weight}: {last.message}"
        ) from error


def wait_phase(
    api_client: client.ApiClient, namespace: str, name: str, phases: tuple[Phase, ...], timeout: float
) -> ModelRolloutStatus:
    """In one of `phases`, its weight live (see tests.support.scenario.settled)."""
    return wait_status(
        api_client, namespace, name, settled(*phases), f"settled in {'/'.join(phases)}", timeout
    )


def wait_step(api_client: client.ApiClient, namespace: str, name: str, index: int) -> ModelRolloutStatus:
    """The rollout at step `index`, still active."""
    return wait_status(
        api_client,
        namespace,
        name,
        lambda s: s.current_step_index == index and s.phase not in FINISHED,
        f"at step {index}",
    )


@contextmanager
def plain_rollout_at_step(
    api_client: client.ApiClient, namespace: str, steps: list[dict[str, Any]], index: int = 1
) -> Iterator[RouteRecorder]:
    """Rollout `chat` without analysis on route `chat` between chat-v1 and chat-v2, brought to step
    `index`; yields the recorder of every weight the route shows."""
    create_model_routes(api_client, namespace, ["chat"])
    recorder = RouteRecorder(client.CustomObjectsApi(api_client), namespace, "chat")
    recorder.start()
    try:
        create(api_client, plain_rollout("chat", namespace, "chat", steps))
        wait_step(api_client, namespace, "chat", index)
        yield recorder
    finally:
        recorder.stop()


def send_command(api_client: client.ApiClient, namespace: str, name: str, action: str, id_: str) -> None:
    """What `modelgate <action>` does: the command annotation, which the operator handles once by id."""
    annotations = {"modelgate.io/command": json.dumps({"action": action, "id": id_})}
    client.CustomObjectsApi(api_client).patch_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, PLURAL, name, {"metadata": {"annotations": annotations}}
    )
