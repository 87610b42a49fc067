"""The demo's serving on the bed, shared by `make demo` and `make playground`: examples/demo/serving.yaml
in a namespace of its own, its Deployments' Pods on the loopback node, a simulator per Pod with the
arguments of its container, and a Gateway on Traefik's web entrypoint for its HTTPRoute."""

from __future__ import annotations

import json
from typing import Any

import yaml
from kubernetes import client

from testbed.fleet import ModelFleet
from testbed.localcluster import LocalCluster
from testbed.loopback_pods import LoopbackPods, on_loopback_node
from testbed.traefik_gateway import TraefikGateway, gateway, gateway_class, wait_until_served_by
from testbed.versions import REPO_ROOT

SERVING = REPO_ROOT / "examples" / "demo" / "serving.yaml"
GATEWAY = "inference-gateway"  # the Gateway serving.yaml's route attaches to
INCUMBENT = "chat-v1"  # the Deployment the route sends everything to


def serving_documents() -> list[dict[str, Any]]:
    """serving.yaml, its Deployments' Pods placed on the loopback node, where Traefik reaches the
    simulators on their Pod IPs."""
    documents = list(yaml.safe_load_all(SERVING.read_text()))
    return [on_loopback_node(d) if d["kind"] == "Deployment" else d for d in documents]


def start_gateway(bed: LocalCluster, api_client: client.ApiClient) -> TraefikGateway:
    """Traefik, and the loopback node whose Pods' IPs it can reach."""
    LoopbackPods(bed, api_client).ensure_node()
    bed.kubectl("apply", "-f", "-", stdin=json.dumps(gateway_class()))
    return TraefikGateway.start(bed)


def serve(
    bed: LocalCluster,
    api_client: client.ApiClient,
    fleet: ModelFleet,
    traefik: TraefikGateway,
    namespace: str,
) -> None:
    """The serving in a new `namespace`, a simulator per Pod, and the Gateway Traefik serves; returns
    once Traefik sends every request to the incumbent."""
    bed.kubectl("delete", "namespace", namespace, "--ignore-not-found", "--wait=true")
    bed.kubectl("create", "namespace", namespace)
    documents = serving_documents()
    applied = [gateway(GATEWAY, namespace, traefik.web_port), *documents]
    bed.kubectl("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump_all(applied))
    endpoints = LoopbackPods(bed, api_client)
    for deployment in (d["metadata"]["name"] for d in documents if d["kind"] == "Deployment"):
        fleet.simulate(namespace, deployment)
        endpoints.publish(namespace, deployment)
    wait_until_served_by(traefik.url, INCUMBENT)
