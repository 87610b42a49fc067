"""Rollouts between two LeaderWorkerSets, on parts no one here wrote: LeaderWorkerSet's own CRD and
controller (sigs.k8s.io/lws, testbed/leaderworkersets.py) make each group's leader and worker Pods
through the bed's StatefulSet controller; llm-d's vLLM simulator serves on each leader Pod's IP (the
workers serve nothing); Traefik splits real requests by the operator's weights. The manifest is the
topology page's own, examples/topologies/leaderworkerset.yaml."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from modelgate.api import ModelRolloutStatus, Phase
from modelgate.metrics.prometheus_http import PrometheusClient
from testbed.fleet import ModelFleet
from testbed.inference_sim import SimulatorFlags
from testbed.leaderworkersets import leaderworkersets, on_the_bed
from testbed.localcluster import LocalCluster
from testbed.loopback_pods import LoopbackPods
from testbed.operator_process import OperatorProcess
from testbed.traefik_gateway import TraefikGateway, answers_by_pod, gateway
from testbed.traffic_driver import BackgroundTraffic, gateway_driver
from testbed.versions import REPO_ROOT
from testbed.waiting import wait_for
from tests.support.kube import create
from tests.support.scenario import RouteRecorder, settled
from tests.support.simulated import SimulatedScenario

MANIFEST = REPO_ROOT / "examples" / "topologies" / "leaderworkerset.yaml"
SIDES = ("chat-v1", "chat-v2")
FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)
# The candidate's first token three times the incumbent's: the ttft comparison's breach.
SLOW_START = SimulatorFlags(time_to_first_token=0.15, time_to_first_token_std_dev=0.015)


@pytest.fixture(scope="module")
def lws_controller(local_bed: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    with leaderworkersets(local_bed, tmp_path_factory.mktemp("lws")):
        yield


def wait_until_served_by_leader(url: str, leader: str) -> None:
    wait_for(
        lambda: set(answers_by_pod(url, 5)) == {leader},
        timeout=60,
        what=f"the gateway at {url} to send leader Pod {leader} every request",
    )


def documents() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(Path(MANIFEST).read_text()) if d]


@contextmanager
def lws_serving(
    bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    traefik: TraefikGateway,
    candidate: SimulatorFlags | None,
) -> Iterator[tuple[SimulatedScenario, dict[str, Any]]]:
    """The page's LeaderWorkerSets, Services and route, chat-v1 taking all traffic; each leader Pod
    simulated with its container's arguments (the candidate's with `candidate`, where given). Yields
    the scenario and the page's ModelRollout, not yet applied."""
    placed = on_the_bed(documents(), namespace, bed.prometheus_url)
    [rollout] = [d for d in placed if d["kind"] == "ModelRollout"]
    create(api_client, gateway("inference", namespace, traefik.web_port))
    for document in placed:
        if document is not rollout:
            create(api_client, document)
    fleet = ModelFleet(bed, api_client)
    endpoints = LoopbackPods(bed, api_client)
    recorder = RouteRecorder(
        client.CustomObjectsApi(api_client),
        namespace,
        "chat",
        backends=(f"{SIDES[0]}-leaders", f"{SIDES[1]}-leaders"),
    )
    try:
        for name, flags in zip(SIDES, (None, candidate), strict=True):
            fleet.simulate_leaders(namespace, name, flags)
            endpoints.publish(namespace, f"{name}-leaders")
        wait_until_served_by_leader(traefik.url, f"{SIDES[0]}-0")
        recorder.start()
        traffic = BackgroundTraffic(gateway_driver(traefik.url, rps=50, max_in_flight=64))
        with traffic:
            prometheus = PrometheusClient(bed.prometheus_url, timeout=2)
            yield (
                SimulatedScenario(api_client, namespace, fleet, recorder, traffic, traefik, prometheus),
                rollout,
            )
    finally:
        recorder.stop()
        fleet.stop()


def finished(scenario: SimulatedScenario, rollout: dict[str, Any]) -> ModelRolloutStatus:
    scenario.apply(rollout)
    final: ModelRolloutStatus = scenario.wait_for_status(
        "the rollout to finish", lambda s: s.phase in FINISHED, 180
    )
    return final


def test_a_slow_leaderworkerset_candidate_is_rolled_back_naming_its_leader_pods(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
    lws_controller: None,
    record_property: Callable[[str, object], None],
) -> None:
    with lws_serving(local_bed, api_client, namespace, traefik, SLOW_START) as (scenario, rollout):
        final = finished(scenario, rollout)
        assert final.phase is Phase.ROLLED_BACK, final.message
        scenario.wait_for_status("the rollback on the route", settled(Phase.ROLLED_BACK))
        reason = scenario.wait_for_status(
            "the breach's per-pod values", lambda s: s.rollback_reason and s.rollback_reason.pods
        ).rollback_reason
    assert reason is not None and reason.metric == "ttft", reason
    # The leader of chat-v2's one group serves; its worker, chat-v2-0-1, is no Pod of the side's.
    assert [pod.pod for pod in reason.pods] == ["chat-v2-0"], reason.pods
    record_property("ttft P99 candidate at rollback (s)", reason.value)
