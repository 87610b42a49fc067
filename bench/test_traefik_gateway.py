"""A rollout step moves real gateway traffic: Traefik's Kubernetes Gateway provider serves the HTTPRoute
the operator edits, and requests sent to Traefik land on the two models' Pods (through Service,
EndpointSlice and Pod IP) in the proportion of the weights the operator wrote. The Pods are served by
llm-d's vLLM simulator, which names the Pod that answered in a header of each answer. In `make bench`
(12 s of a worker): `make test` counts Traefik's split at each weight of a promotion, by the
simulators' own counters, in test_simulated_promotion.py."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator

import pytest
from kubernetes import client

from modelgate.api import Phase
from testbed.fleet import ModelFleet
from testbed.inference_sim import SimulatorFlags
from testbed.localcluster import LocalCluster
from testbed.loopback_pods import LoopbackPods, on_loopback_node
from testbed.manifests import http_route, model_deployment, model_rollout, model_service
from testbed.operator_process import OperatorProcess
from testbed.traefik_gateway import TraefikGateway, answers_by_model, gateway
from testbed.waiting import wait_for
from tests.support.cli import modelgate
from tests.support.kube import create
from tests.support.scenario import Rollouts
from tests.support.traefik import assert_listening_on_loopback_only

pytestmark = pytest.mark.bench
MODELS = ("chat-v1", "chat-v2")
REQUESTS = 100
# Answers in about 10 ms (the default's are 0.1 s): the requests counted here go one after another,
# and what they show is Traefik's split, not the simulator's latency.
QUICK = SimulatorFlags(
    time_to_first_token=0.005,
    time_to_first_token_std_dev=0.001,
    inter_token_latency=0.001,
    inter_token_latency_std_dev=0.0003,
)


def wait_for_answers(url: str, accept: Callable[[Counter[str]], bool], what: str) -> None:
    """Until a batch of 10 requests is answered as `accept` wants: Traefik loads a route's new
    weights a moment after the API server has them."""
    wait_for(lambda: accept(answers_by_model(url, 10)) or None, timeout=60, what=what)


@pytest.fixture
def served_through_traefik(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, traefik: TraefikGateway
) -> Iterator[ModelFleet]:
    """chat-v1 and chat-v2, one Pod each on the loopback node with a simulator on the Pod's IP,
    behind HTTPRoute `chat` (all to chat-v1) on a Gateway that Traefik serves."""
    fleet = ModelFleet(local_bed, api_client)
    endpoints = LoopbackPods(local_bed, api_client)
    create(api_client, gateway("inference", namespace, traefik.web_port))
    for name in MODELS:
        create(api_client, on_loopback_node(model_deployment(name, namespace, replicas=1)))
        create(api_client, model_service(name, namespace))
    create(api_client, http_route("chat", namespace, {"chat-v1": 100, "chat-v2": 0}))
    try:
        for name in MODELS:
            fleet.simulate(namespace, name, QUICK)
            endpoints.publish(namespace, name)
        wait_for_answers(
            traefik.url, lambda answered: answered == Counter({"chat-v1": 10}), "traefik to serve chat-v1"
        )
        yield fleet
    finally:
        fleet.stop()


def test_a_rollout_step_moves_traefik_traffic_by_the_weights_written(
    served_through_traefik: ModelFleet,
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
    record_property: Callable[[str, object], None],
) -> None:
    assert_listening_on_loopback_only(served_through_traefik, traefik, pods=len(MODELS))
    rollouts = Rollouts(api_client, namespace)
    rollouts.apply(model_rollout("chat", namespace, steps=[{"setWeight": 30}, {"pause": {}}]))
    rollouts.wait_for_status(
        "the first step's weight on the route", lambda s: s.current_step_index == 1 and s.live_weight == 30
    )
    wait_for_answers(traefik.url, lambda answered: answered["chat-v2"] > 0, "traefik to send chat-v2 some")
    at_thirty = answers_by_model(traefik.url, REQUESTS)
    record_property("answers through traefik at candidate weight 30", dict(sorted(at_thirty.items())))
    # Traefik's weighted round robin is deterministic: 30 of 100, give or take where its cycle began.
    assert abs(at_thirty["chat-v2"] - 30) <= 2, at_thirty
    assert at_thirty["chat-v1"] + at_thirty["chat-v2"] == REQUESTS, at_thirty

    promoted = modelgate(local_bed.kubeconfig, "promote", "--full", "chat", "-n", namespace)
    assert promoted.returncode == 0, promoted.stdout + promoted.stderr
    rollouts.wait_for_status(
        "the promotion on the route", lambda s: s.phase is Phase.SUCCEEDED and s.live_weight == 100
    )
    wait_for_answers(
        traefik.url, lambda answered: answered == Counter({"chat-v2": 10}), "traefik to send chat-v2 all"
    )
    assert answers_by_model(traefik.url, REQUESTS) == Counter({"chat-v2": REQUESTS})
