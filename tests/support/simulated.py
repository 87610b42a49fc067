"""A serving scenario made of parts no one here wrote: two model Deployments whose Pods are served by
llm-d's vLLM simulator on their loopback Pod IPs, behind HTTPRoute `chat` on a Gateway that Traefik
serves; the traffic goes to Traefik's entrypoint, and Traefik splits it by the weights the operator
writes. What each side answered is read from the simulators' own counters in Prometheus."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from modelgate.api import Phase
from modelgate.metrics.prometheus_http import PrometheusClient
from testbed.fleet import ModelFleet
from testbed.inference_sim import SimulatorFlags
from testbed.localcluster import LocalCluster
from testbed.loopback_pods import LoopbackPods, on_loopback_node
from testbed.manifests import http_route, model_deployment, model_rollout, model_service
from testbed.traefik_gateway import TraefikGateway, gateway, wait_until_served_by
from testbed.traffic_driver import BackgroundTraffic, Weights, gateway_driver
from tests.support.kube import create
from tests.support.scenario import DEPLOYMENTS, RouteRecorder, Scenario, settled
from tests.support.traefik import wait_until_traefik_serves

GATEWAY = "inference"
ROUTE = "chat"
GPU = "nvidia.com/gpu"
HOLD = "6s"  # each weight of a promotion is held this long, so each side's share can be counted
# The same serving on both sides: what a healthy candidate looks like.
HEALTHY = SimulatorFlags(time_to_first_token=0.05, inter_token_latency=0.01)
METRICS = [
    # Failures are counted where every request passes: at the gateway.
    {"name": "errors", "preset": "errorRate", "source": "traefik", "max": 0.05},
    {"name": "ttft", "preset": "ttftP99", "compare": {"maxRatio": 1.5}},
    {"name": "latency", "preset": "latencyP99", "max": 1.0},
]


def rollout(namespace: str, prometheus: str, weights: list[int]) -> dict[str, object]:
    steps: list[dict[str, object]] = []
    for weight in weights:
        steps += [{"setWeight": weight}, {"pause": {"duration": HOLD}}]
    return model_rollout("chat", namespace, steps=steps, prometheus=prometheus, metrics=METRICS)


@dataclass
class SimulatedScenario(Scenario):
    traefik: TraefikGateway
    prometheus: PrometheusClient


@contextmanager
def simulated_serving(
    bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    traefik: TraefikGateway,
    candidate: SimulatorFlags,
    *,
    incumbent: SimulatorFlags | None = None,
    rps: float = 50,
    max_in_flight: int = 64,
    gpus: tuple[int, int] = (0, 0),
) -> Iterator[SimulatedScenario]:
    """chat-v1 (the incumbent) takes all of Traefik's traffic through HTTPRoute `chat`; chat-v2 is
    ready. One Pod each, on the loopback node, each simulated with its flags; `gpus`: the
    nvidia.com/gpu each side's Pod requests (incumbent, candidate)."""
    fleet = ModelFleet(bed, api_client)
    endpoints = LoopbackPods(bed, api_client)
    create(api_client, gateway(GATEWAY, namespace, traefik.web_port))
    for name, requested in zip(DEPLOYMENTS, gpus, strict=True):
        deployment = model_deployment(name, namespace, replicas=1, image="llm-d-inference-sim")
        create(api_client, on_loopback_node(requesting_gpus(deployment, requested)))
        create(api_client, model_service(name, namespace))
    create(
        api_client, http_route(ROUTE, namespace, {DEPLOYMENTS[0]: 100, DEPLOYMENTS[1]: 0}, gateway=GATEWAY)
    )
    recorder = RouteRecorder(client.CustomObjectsApi(api_client), namespace, ROUTE)
    try:
        for name, flags in zip(DEPLOYMENTS, (incumbent or SimulatorFlags(), candidate), strict=True):
            fleet.simulate(namespace, name, flags)
            endpoints.publish(namespace, name)
        wait_until_served_by(traefik.url, DEPLOYMENTS[0])
        recorder.start()
        traffic = BackgroundTraffic(gateway_driver(traefik.url, rps=rps, max_in_flight=max_in_flight))
        with traffic:
            yield SimulatedScenario(
                api_client,
                namespace,
                fleet,
                recorder,
                traffic,
                traefik,
                PrometheusClient(bed.prometheus_url, timeout=2),
            )
    finally:
        recorder.stop()
        fleet.stop()


def requesting_gpus(deployment: dict[str, Any], gpus: int) -> dict[str, Any]:
    """The Deployment with its server container requesting `gpus` nvidia.com/gpu (none: unchanged)."""
    if gpus:
        [server] = deployment["spec"]["template"]["spec"]["containers"]
        server["resources"] = {"requests": {GPU: str(gpus)}, "limits": {GPU: str(gpus)}}
    return deployment


def candidate_at(weight: int) -> Callable[[Weights], bool]:
    return lambda carried: carried.get(DEPLOYMENTS[1]) == weight


def promote(
    scenario: SimulatedScenario, prometheus: str, weights: list[int], record: Callable[[str, object], None]
) -> dict[int, float]:
    """Promotes chat-v2 through `weights`; returns when (time.time()) Traefik served each weight."""
    scenario.apply(rollout(scenario.namespace, prometheus, weights))
    served_at = {
        weight: wait_until_traefik_serves(
            scenario.traefik,
            scenario.api_client,
            scenario.namespace,
            ROUTE,
            candidate_at(weight),
        )
        for weight in weights
    }
    final = scenario.wait_for_status(
        "the rollout to finish", lambda s: s.phase in (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED), 120
    )
    assert final.phase is Phase.SUCCEEDED, final.message
    scenario.wait_for_status("the promotion on the route", settled(Phase.SUCCEEDED))
    verdicts = {record.name: record.verdict for record in final.analysis}
    record("verdicts at promotion", {name: str(v) for name, v in verdicts.items()})
    return served_at
