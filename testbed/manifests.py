"""Plain-dict manifests the bed, the demo and the tests create: model Deployments, their Services,
and the HTTPRoute that splits traffic between them."""

from __future__ import annotations

from typing import Any

GATEWAY_GROUP = "gateway.networking.k8s.io"
GATEWAY_VERSION = "v1"

Manifest = dict[str, Any]


def model_deployment(
    name: str, namespace: str, replicas: int = 2, image: str = "modelgate/model-server-double"
) -> Manifest:
    labels = {"app.kubernetes.io/name": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "containers": [{"name": "server", "image": image, "ports": [{"containerPort": 8000}]}]
                },
            },
        },
    }


def model_service(name: str, namespace: str) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": {"app.kubernetes.io/name": name}, "ports": [{"port": 8000, "targetPort": 8000}]},
    }


def http_route(name: str, namespace: str, weights: dict[str, int], gateway: str = "inference") -> Manifest:
    """One rule whose backendRefs are the given Services, with their weights."""
    return {
        "apiVersion": f"{GATEWAY_GROUP}/{GATEWAY_VERSION}",
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "parentRefs": [{"name": gateway}],
            "rules": [
                {
                    "matches": [{"path": {"type": "PathPrefix", "value": "/v1"}}],
                    "backendRefs": [
                        {"name": backend, "port": 8000, "weight": weight}
                        for backend, weight in weights.items()
                    ],
                }
            ],
        },
    }


def model_rollout(
    name: str,
    namespace: str,
    *,
    steps: list[dict[str, Any]],
    prometheus: str | None = None,
    metrics: list[dict[str, Any]] | None = None,
    incumbent: str = "chat-v1",
    candidate: str = "chat-v2",
    route: str = "chat",
    interval: str = "2s",
    min_requests: int = 20,
    rollback: dict[str, Any] | None = None,
    progress_deadlines: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
) -> Manifest:
    """A ModelRollout between two model Deployments behind one HTTPRoute rule; without `prometheus`,
    one without analysis, whose steps advance on time alone."""
    spec: Manifest = {
        "incumbent": {"deployment": incumbent},
        "candidate": {"deployment": candidate},
        "trafficRouting": {
            "gatewayAPI": {
                "httpRoute": route,
                "incumbentBackend": incumbent,
                "candidateBackend": candidate,
            }
        },
        "steps": steps,
        "rollback": rollback or {},
    }
    if progress_deadlines is not None:
        spec["progressDeadlines"] = progress_deadlines
    if prometheus is not None:
        spec["analysis"] = {
            "interval": interval,
            "minRequests": min_requests,
            "prometheus": {"address": prometheus, "timeout": "2s"},
            "metrics": metrics or [],
        }
    return {
        "apiVersion": "modelgate.io/v1alpha1",
        "kind": "ModelRollout",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": spec,
    }


SEED_METRICS: list[dict[str, Any]] = [
    {"name": "error-rate", "preset": "errorRate", "max": 0.01},
    {"name": "p99-latency", "preset": "latencyP99", "max": 2.5},
    {"name": "refusal-rate", "preset": "refusalRate", "max": 0.05},
]
