"""One edit per upgrade, on the bed, from examples/topologies/one-edit.yaml: the operator generates
the candidate from the incumbent and its patch, llm-d's simulator serves both behind Traefik, and
the end leaves one serving workload (promoted into the incumbent) or nothing generated (rolled back,
deleted mid-step), the incumbent taking all traffic."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import Phase, parse_spec
from modelgate.kube.generated_objects import GENERATED_LABEL
from testbed.fleet import ModelFleet
from testbed.inference_sim import SimulatorFlags
from testbed.localcluster import LocalCluster
from testbed.loopback_pods import LoopbackPods, on_loopback_node
from testbed.operator_process import OperatorProcess
from testbed.traefik_gateway import TraefikGateway, gateway, wait_until_served_by
from testbed.traffic_driver import BackgroundTraffic, gateway_driver
from testbed.versions import REPO_ROOT
from testbed.waiting import wait_for
from tests.support.kube import create
from tests.support.scenario import Rollouts

MANIFEST = REPO_ROOT / "examples/topologies/one-edit.yaml"
INCUMBENT = "chat-v1"
ROUTE = "chat"
FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)


def bed_manifests(path: Path, namespace: str, prometheus: str) -> list[dict[str, Any]]:
    """The example's objects as the bed needs them, and nothing else changed: each in `namespace`,
    the rollout's analysis reading the bed's Prometheus, the Deployment's Pods on the loopback node
    (where Traefik reaches them; the generated candidate copies its Pod template)."""
    objects: list[dict[str, Any]] = []
    for document in yaml.safe_load_all(path.read_text()):
        obj = copy.deepcopy(document)
        obj["metadata"]["namespace"] = namespace
        if obj["kind"] == "Deployment":
            obj = on_loopback_node(obj)
        if obj["kind"] == "ModelRollout":
            obj["spec"]["analysis"]["prometheus"]["address"] = prometheus
        objects.append(obj)
    return objects


@dataclass
class OneEdit(Rollouts):
    """The example served on the bed; `manifest` is its ModelRollout, not yet applied."""

    bed: LocalCluster
    fleet: ModelFleet
    manifest: dict[str, Any]

    def serve_candidate(self) -> str:
        """Once the operator generated it: the simulator for the candidate's Pods (with the args of
        their container, the patched ones), published to Traefik. Returns its name."""
        name = parse_spec(self.manifest["spec"]).candidate.name
        apps = client.AppsV1Api(self.api_client)
        wait_for(
            lambda: bool(
                apps.list_namespaced_deployment(self.namespace, field_selector=f"metadata.name={name}").items
            ),
            timeout=60,
            what=f"the generated Deployment {name}",
        )
        self.fleet.simulate(self.namespace, name)
        LoopbackPods(self.bed, self.api_client).publish(self.namespace, name)
        return name


@pytest.fixture
def scenario(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
) -> Iterator[OneEdit]:
    """The example's incumbent, Service and route served by the simulator behind Traefik, with
    traffic, and the operator running."""
    fleet = ModelFleet(local_bed, api_client)
    objects = bed_manifests(MANIFEST, namespace, local_bed.prometheus_url)
    create(api_client, gateway("inference", namespace, traefik.web_port))
    for obj in objects[:-1]:
        create(api_client, obj)
    try:
        fleet.simulate(namespace, INCUMBENT)
        LoopbackPods(local_bed, api_client).publish(namespace, INCUMBENT)
        wait_until_served_by(traefik.url, INCUMBENT)
        with BackgroundTraffic(gateway_driver(traefik.url, rps=40, max_in_flight=32)):
            yield OneEdit(api_client, namespace, local_bed, fleet, objects[-1])
    finally:
        fleet.stop()


def incumbent_args(api_client: client.ApiClient, namespace: str) -> list[str]:
    deployment: Any = client.AppsV1Api(api_client).read_namespaced_deployment(INCUMBENT, namespace)
    return list(deployment.spec.template.spec.containers[0].args)


def route_backends(api_client: client.ApiClient, namespace: str) -> dict[str, int]:
    route = client.CustomObjectsApi(api_client).get_namespaced_custom_object(
        "gateway.networking.k8s.io", "v1", namespace, "httproutes", ROUTE
    )
    return {ref["name"]: ref.get("weight", 1) for ref in route["spec"]["rules"][0]["backendRefs"]}


def generated_left(api_client: client.ApiClient, namespace: str) -> list[str]:
    selector = GENERATED_LABEL
    deployments = client.AppsV1Api(api_client).list_namespaced_deployment(namespace, label_selector=selector)
    services = client.CoreV1Api(api_client).list_namespaced_service(namespace, label_selector=selector)
    return [f"Deployment {d.metadata.name}" for d in deployments.items] + [
        f"Service {s.metadata.name}" for s in services.items
    ]


def nothing_generated_left(api_client: client.ApiClient, namespace: str) -> None:
    wait_for(
        lambda: (
            not generated_left(api_client, namespace)
            and route_backends(api_client, namespace) == {INCUMBENT: 100}
        ),
        timeout=60,
        what="nothing generated left and the incumbent all traffic",
    )


def test_one_edit_generates_the_candidate_promotes_it_into_the_incumbent_and_leaves_one_workload(
    scenario: OneEdit,
) -> None:
    api_client, namespace = scenario.api_client, scenario.namespace
    assert incumbent_args(api_client, namespace)[0] == "--model=chat-v1"
    scenario.apply(scenario.manifest)
    name = scenario.serve_candidate()
    assert name in route_backends(api_client, namespace)  # its backendRef, added by the operator
    final = scenario.wait_for_status("the rollout to finish", lambda s: s.phase in FINISHED, 180)
    assert final.phase is Phase.SUCCEEDED, final.message
    wait_for(
        lambda: incumbent_args(api_client, namespace)[0] == "--model=chat-v2",
        timeout=60,
        what="the incumbent to take the promoted patch",
    )
    nothing_generated_left(api_client, namespace)
    deployments = client.AppsV1Api(api_client).list_namespaced_deployment(namespace).items
    assert [d.metadata.name for d in deployments] == [INCUMBENT]
    promoted = scenario.status()
    assert promoted.phase is Phase.SUCCEEDED and "carries the promoted patch" in (promoted.message or "")


def test_a_bad_patch_is_rolled_back_and_leaves_nothing_generated(scenario: OneEdit) -> None:
    api_client, namespace = scenario.api_client, scenario.namespace
    failing = SimulatorFlags(failure_rate_percent=50, failure_types=("server_error",))
    scenario.manifest["spec"]["candidatePatch"] = {"args": failing.args("chat-v2")}  # the server errors
    scenario.apply(scenario.manifest)
    scenario.serve_candidate()
    final = scenario.wait_for_status("the rollout to finish", lambda s: s.phase in FINISHED, 180)
    assert final.phase is Phase.ROLLED_BACK, final.message
    assert final.rollback_reason is not None and final.rollback_reason.metric == "errors"
    nothing_generated_left(api_client, namespace)
    assert incumbent_args(api_client, namespace)[0] == "--model=chat-v1"  # untouched


def test_an_edited_patch_replaces_the_candidate_and_deleting_mid_step_removes_what_it_generated(
    scenario: OneEdit,
) -> None:
    api_client, namespace = scenario.api_client, scenario.namespace
    scenario.manifest["spec"]["steps"] = [{"setWeight": 30}, {"pause": {}}]  # held at 30 until deleted
    scenario.apply(scenario.manifest)
    first = scenario.serve_candidate()
    at_30 = {INCUMBENT: 70, first: 30}
    wait_for(lambda: route_backends(api_client, namespace) == at_30, timeout=90, what="the candidate at 30%")

    # The next upgrade, mid-rollout: a new candidate, and a new rollout from step 0.
    scenario.manifest["spec"]["candidatePatch"]["model"] = "chat-v3"
    objects = client.CustomObjectsApi(api_client)
    edit = {"spec": {"candidatePatch": scenario.manifest["spec"]["candidatePatch"]}}
    objects.patch_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, "chat", edit)
    second = scenario.serve_candidate()
    assert second != first
    wait_for(
        lambda: (
            route_backends(api_client, namespace) == {INCUMBENT: 70, second: 30}
            and generated_left(api_client, namespace) == [f"Deployment {second}", f"Service {second}"]
        ),
        timeout=90,
        what="the earlier candidate gone and the new one at 30%",
    )

    objects.delete_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, "chat")
    nothing_generated_left(api_client, namespace)
