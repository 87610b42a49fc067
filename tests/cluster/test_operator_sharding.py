"""Two operators split the rollouts between them, by label selector or by namespace, and never touch
each other's: every rollout completes, its Events come only from its own operator, each operator's
logs name only its own rollouts, and a rollout outside both shards is left alone."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from modelgate.api import ModelRolloutStatus, Phase
from testbed.localcluster import LocalCluster
from testbed.manifests import model_rollout
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.cli import modelgate
from tests.support.kube import (
    create,
    create_model_routes,
    rollout_status,
    route_weights,
    scratch_namespace,
    wait_for_route_weights,
)
from tests.support.operators import admin_operator_stopped, operator_events, running, ticked_rollouts

SHARD_LABEL = "modelgate.io/shard"
ROLLOUTS_PER_SHARD = 2
# Without analysis a weight step is over at the next resync (10 s), a timed pause when it ends.
QUICK_STEPS: list[dict[str, Any]] = [{"setWeight": 50}, {"pause": {"duration": "1s"}}]


@dataclass(frozen=True)
class Shard:
    identity: str  # its operator's --identity: Events say reportingInstance modelgate-<identity>
    namespace: str
    labels: dict[str, str]
    operator_args: tuple[str, ...]  # the scope of its operator

    def rollouts(self) -> list[str]:
        return [f"{self.identity}-{index}" for index in range(ROLLOUTS_PER_SHARD)]


@dataclass(frozen=True)
class Layout:
    shards: tuple[Shard, Shard]
    outsider_namespace: str  # where a rollout that neither shard covers lives


def by_label(namespaces: list[str]) -> Layout:
    """Both shards in one namespace, told apart by a label; both operators watch every namespace."""
    shards = tuple(
        Shard(f"shard-{key}", namespaces[0], {SHARD_LABEL: key}, (f"--selector={SHARD_LABEL}={key}",))
        for key in ("a", "b")
    )
    return Layout((shards[0], shards[1]), namespaces[0])


def by_namespace(namespaces: list[str]) -> Layout:
    """A namespace per shard; the outsider lives in a third that neither operator watches."""
    shards = tuple(
        Shard(f"shard-{key}", namespace, {}, (f"--namespace={namespace}",))
        for key, namespace in zip("ab", namespaces, strict=False)
    )
    return Layout((shards[0], shards[1]), namespaces[2])


@pytest.fixture
def namespaces(api_client: client.ApiClient) -> Iterator[list[str]]:
    with ExitStack() as stack:
        yield [stack.enter_context(scratch_namespace(api_client)) for _ in range(3)]


@pytest.mark.parametrize("split", [by_label, by_namespace], ids=["by label", "by namespace"])
def test_two_operators_never_touch_each_others_rollouts(
    split: Callable[[list[str]], Layout],
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespaces: list[str],
    operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    layout = split(namespaces)
    outsider = "outsider"
    routes: dict[str, list[str]] = {layout.outsider_namespace: [outsider]}  # a route per rollout
    for shard in layout.shards:
        routes.setdefault(shard.namespace, []).extend(shard.rollouts())
    for namespace, names in routes.items():
        create_model_routes(api_client, namespace, names)
    operators = {
        shard.identity: OperatorProcess(
            local_bed.kubeconfig,
            tmp_path / shard.identity,
            extra_args=[*shard.operator_args, f"--identity={shard.identity}"],
        )
        for shard in layout.shards
    }
    with admin_operator_stopped(operator), running(*operators.values()):
        create(
            api_client, model_rollout(outsider, layout.outsider_namespace, steps=QUICK_STEPS, route=outsider)
        )
        for shard in layout.shards:
            for name in shard.rollouts():
                manifest = model_rollout(
                    name, shard.namespace, steps=QUICK_STEPS, route=name, labels=shard.labels
                )
                create(api_client, manifest)
        everyone = [(shard.namespace, name) for shard in layout.shards for name in shard.rollouts()]
        wait_for(
            lambda: all(rollout_status(api_client, *key).phase is Phase.SUCCEEDED for key in everyone),
            timeout=60,
            what=f"every sharded rollout to succeed: {everyone}",
        )
        ticked = {identity: ticked_rollouts(process) for identity, process in operators.items()}

        for shard in layout.shards:
            assert ticked[shard.identity] == {(shard.namespace, name) for name in shard.rollouts()}
            events = operator_events(api_client, shard.namespace)
            for name in shard.rollouts():
                wait_for_route_weights(api_client, shard.namespace, name, {"chat-v1": 0, "chat-v2": 100})
                reporters = {event["reportingInstance"] for event in events.get(name, [])}
                assert reporters == {f"modelgate-{shard.identity}"}, name
        # Both operators ran through every tick of their own rollouts meanwhile; this one had all that
        # time to be picked up by mistake.
        assert rollout_status(api_client, layout.outsider_namespace, outsider) == ModelRolloutStatus()
        assert outsider not in operator_events(api_client, layout.outsider_namespace)
        assert route_weights(api_client, layout.outsider_namespace, outsider) == {
            "chat-v1": 100,
            "chat-v2": 0,
        }


def test_a_selector_the_api_server_cannot_parse_stops_the_operator_at_start(local_bed: LocalCluster) -> None:
    run = modelgate(
        local_bed.kubeconfig, "run", "--selector=modelgate.io/shard in a", "--metrics-address=127.0.0.1:0"
    )
    assert run.returncode != 0
    assert "--selector 'modelgate.io/shard in a'" in run.stderr
