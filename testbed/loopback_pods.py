"""Pods whose IPs are loopback addresses, so a real gateway outside the cluster can reach the doubles
that stand in for them. The manifests are pure functions; `LoopbackPods` creates them in the bed.

kwok gives a Pod an IP from its node's `spec.podCIDR`. A fake node whose range lies in 127.0.0.0/8
hands out loopback Pod IPs, and a double listening on the Pod's IP and container port answers for
the Pod. Two things stand between such Pods and a gateway:

- kube-apiserver refuses loopback addresses in EndpointSlices of addressType IPv4 or IPv6
  ("may not be in the loopback range (127.0.0.0/8, ::1/128)"), so kube-controller-manager's
  endpointslice controller cannot publish these Pods. The bed publishes them itself in an
  EndpointSlice of addressType FQDN, whose addresses are validated as domain names (a dotted quad
  is one): `endpoint_slice` below.
- Other tests' Pods must keep ordinary addresses (their Services' EndpointSlices would fail the
  same way), so the loopback node is tainted and only Pods that tolerate it run there.
"""

from __future__ import annotations

import copy
import ipaddress
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kubernetes import client

from testbed.fleet import pod_is_ready
from testbed.localcluster import STARTUP_TIMEOUT, LocalCluster, fake_node
from testbed.manifests import Manifest

LOOPBACK_NODE = "kwok-loopback-node"
LOOPBACK_TAINT = "modelgate.io/loopback-pods"
# The EndpointSlice label naming who manages a slice; kube-controller-manager leaves others alone.
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
BED_MANAGER = "modelgate-bed"
SERVICE_NAME = "kubernetes.io/service-name"


def pod_network(api_server_port: int) -> ipaddress.IPv4Network:
    """A /24 of 127.0.0.0/8 that no other live bed on this machine uses: it is named after the bed's
    API server port, which that bed's kube-apiserver holds while it runs (ports from 1024 on never
    name 127.0.0.0/24, where 127.0.0.1 is)."""
    if not 1024 <= api_server_port <= 65535:
        raise ValueError(f"API server port {api_server_port} is not in 1024..65535")
    return ipaddress.IPv4Network(f"127.{api_server_port >> 8}.{api_server_port & 0xFF}.0/24")


def loopback_node(pod_cidr: ipaddress.IPv4Network) -> Manifest:
    """The fake node whose Pods get loopback IPs; only Pods tolerating LOOPBACK_TAINT run on it."""
    node = fake_node(LOOPBACK_NODE)
    node["spec"] = {
        "podCIDR": str(pod_cidr),
        "taints": [{"key": LOOPBACK_TAINT, "value": "true", "effect": "NoSchedule"}],
    }
    return node


def on_loopback_node(deployment: Manifest) -> Manifest:
    """A copy of the Deployment whose Pods run on the loopback node."""
    placed = copy.deepcopy(deployment)
    pod_spec = placed["spec"]["template"]["spec"]
    pod_spec["nodeSelector"] = {"kubernetes.io/hostname": LOOPBACK_NODE}
    pod_spec["tolerations"] = [
        {"key": LOOPBACK_TAINT, "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    return placed


@dataclass(frozen=True)
class ReadyPod:
    name: str
    ip: str


def endpoint_slice(namespace: str, service: str, port: int, pods: Sequence[ReadyPod]) -> Manifest:
    """What the endpointslice controller would publish for the Service's Ready Pods, as an FQDN slice
    (see the module docstring). `port` is the Service port's target port, as in the controller's."""
    for pod in pods:
        if not ipaddress.IPv4Address(pod.ip).is_loopback:
            raise ValueError(f"pod {namespace}/{pod.name} has IP {pod.ip}, which is not a loopback address")
    return {
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": f"{service}-loopback",
            "namespace": namespace,
            "labels": {SERVICE_NAME: service, MANAGED_BY: BED_MANAGER},
        },
        "addressType": "FQDN",
        "ports": [{"name": "", "port": port, "protocol": "TCP"}],
        "endpoints": [
            {
                "addresses": [pod.ip],
                "conditions": {"ready": True, "serving": True, "terminating": False},
                "targetRef": {"kind": "Pod", "namespace": namespace, "name": pod.name},
            }
            for pod in pods
        ],
    }


class LoopbackPods:
    """The bed's loopback node, and the EndpointSlices of Services whose Pods run on it."""

    def __init__(self, bed: LocalCluster, api_client: client.ApiClient) -> None:
        self.bed = bed
        self.core = client.CoreV1Api(api_client)

    def ensure_node(self) -> None:
        port = urlsplit(self.bed.api_server_url).port or 0
        self.bed.kubectl("apply", "-f", "-", stdin=json.dumps(loopback_node(pod_network(port))))
        self.bed.kubectl(
            "wait", "--for=condition=Ready", f"node/{LOOPBACK_NODE}", f"--timeout={int(STARTUP_TIMEOUT)}s"
        )

    def publish(self, namespace: str, service: str) -> None:
        """Publishes the Service's Ready Pods (call it once their doubles listen)."""
        spec: Any = self.core.read_namespaced_service(service, namespace).spec
        selector = ",".join(f"{key}={value}" for key, value in spec.selector.items())
        pods: list[Any] = self.core.list_namespaced_pod(namespace, label_selector=selector).items
        ready = [ReadyPod(pod.metadata.name, pod.status.pod_ip) for pod in pods if pod_is_ready(pod)]
        target_port = int(spec.ports[0].target_port)
        self.bed.kubectl(
            "apply", "-f", "-", stdin=json.dumps(endpoint_slice(namespace, service, target_port, ready))
        )
