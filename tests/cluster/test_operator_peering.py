"""Replicas of one operator share a kopf peering object: the older one acts, the younger stands by
and neither ticks nor writes; when the active one is killed (SIGKILL, no goodbye), its record
expires and the standby takes over and finishes the rollout. (A replica that kopf pauses after it
started acting: bench/test_peering_freeze.py.)"""

from __future__ import annotations

from collections.abc import Iterator
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
from tests.support.kube import create_model_routes, rollout_status, wait_for_route_weights
from tests.support.operators import admin_operator_stopped, operator_events, running, ticked_rollouts

PEERING = "modelgate"
# Seconds a record counts as alive without renewal: how long the standby waits after the kill.
LIFETIME = 5
KOPF = ("kopf.dev", "v1")


@dataclass
class Peers:
    """A namespace with a KopfPeering, the chat models and route, and replicas to run there."""

    bed: LocalCluster
    api_client: client.ApiClient
    namespace: str
    state: Path

    @property
    def objects(self) -> client.CustomObjectsApi:
        return client.CustomObjectsApi(self.api_client)

    def replica(self, identity: str) -> OperatorProcess:
        options = [f"--peering={PEERING}", f"--peering-lifetime={LIFETIME}", f"--identity={identity}"]
        return OperatorProcess(self.bed.kubeconfig, self.state / identity, [self.namespace], options)

    def records(self) -> dict[str, Any]:
        body = self.objects.get_namespaced_custom_object(*KOPF, self.namespace, "kopfpeerings", PEERING)
        records: dict[str, Any] = body.get("status") or {}
        return records

    def patch_records(self, records: dict[str, Any]) -> None:
        self.objects.patch_namespaced_custom_object(
            *KOPF, self.namespace, "kopfpeerings", PEERING, {"status": records}
        )

    def start_rollout(self, steps: list[dict[str, Any]]) -> None:
        manifest = model_rollout("chat", self.namespace, steps=steps)
        self.objects.create_namespaced_custom_object(
            "modelgate.io", "v1alpha1", self.namespace, "modelrollouts", manifest
        )

    def status(self) -> ModelRolloutStatus:
        return rollout_status(self.api_client, self.namespace, "chat")

    def wait_for_phase(self, phase: Phase, what: str, timeout: float = 30) -> None:
        wait_for(lambda: self.status().phase is phase, timeout=timeout, what=what)

    def promote(self) -> None:
        promoted = modelgate(self.bed.kubeconfig, "promote", "chat", "-n", self.namespace, "--no-wait")
        assert promoted.returncode == 0, promoted.stdout + promoted.stderr

    def reporters(self) -> dict[str, str]:
        """Event name -> the replica that reported it."""
        return {
            event["metadata"]["name"]: event["reportingInstance"]
            for event in operator_events(self.api_client, self.namespace).get("chat", [])
        }


@pytest.fixture
def peers(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    tmp_path: Path,
) -> Iterator[Peers]:
    peering = {"apiVersion": "kopf.dev/v1", "kind": "KopfPeering", "metadata": {"name": PEERING}}
    client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        *KOPF, namespace, "kopfpeerings", peering
    )
    create_model_routes(api_client, namespace, ["chat"])
    with admin_operator_stopped(operator):
        yield Peers(local_bed, api_client, namespace, tmp_path)


def test_a_standby_replica_takes_over_when_the_active_one_dies(peers: Peers) -> None:
    first, second = peers.replica("first"), peers.replica("second")
    with running(first):
        wait_for(lambda: "first" in peers.records(), timeout=30, what="first's peering record")
        with running(second):
            wait_for(lambda: "second" in peers.records(), timeout=30, what="second's peering record")
            peers.start_rollout([{"setWeight": 20}, {"pause": {}}, {"setWeight": 60}])
            peers.wait_for_phase(Phase.PAUSED, "the first replica to bring the rollout to its pause")
            before_the_kill = peers.reporters()
            assert set(before_the_kill.values()) == {"modelgate-first"}
            assert ticked_rollouts(second) == set()  # the standby did not even read it

            first.kill()
            peers.promote()
            peers.wait_for_phase(
                Phase.SUCCEEDED,
                "the standby to take over, apply the promotion and finish the rollout",
                timeout=LIFETIME + 30,
            )
            after_the_kill = {
                name: reporter for name, reporter in peers.reporters().items() if name not in before_the_kill
            }
            assert after_the_kill and set(after_the_kill.values()) == {"modelgate-second"}
            wait_for_route_weights(peers.api_client, peers.namespace, "chat", {"chat-v1": 0, "chat-v2": 100})
            assert ticked_rollouts(second) == {(peers.namespace, "chat")}
            assert set(peers.records()) == {"second"}  # the survivor removed the dead one's record
