"""InferencePools in the bed: their manifests, the HTTPRoute that splits traffic between two of them,
and what the traffic driver needs to play a gateway in front of them.

A gateway sends a pool's share of requests to the Pods the pool's selector selects (its endpoint
picker chooses among them). The traffic driver takes each backend as the base URLs of the doubles
standing in for its Pods; `pool_targets` finds those for a pool: the Ready Pods its matchLabels
select in its namespace, and the double serving each (by Pod name). The choice among them is the
driver's round robin, not an endpoint picker's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubernetes import client

from testbed.manifests import Manifest, http_route

INFERENCE_GROUP = "inference.networking.k8s.io"
INFERENCE_VERSION = "v1"
INFERENCE_POOLS = "inferencepools"


EXT_PROC_PORT = 9002  # the endpoint picker's gRPC port, as the Inference Extension's chart sets it


def inference_pool(
    name: str,
    namespace: str,
    match_labels: Mapping[str, str],
    port: int = 8000,
    *,
    endpoint_picker: str | None = None,
) -> Manifest:
    """An InferencePool selecting the Pods with `match_labels`; its endpoint picker, the Service
    `endpoint_picker` (spec.endpointPickerRef, optional in v1: most of the bed's pools have none)."""
    spec: dict[str, object] = {
        "selector": {"matchLabels": dict(match_labels)},
        "targetPorts": [{"number": port}],
    }
    if endpoint_picker is not None:
        spec["endpointPickerRef"] = {"name": endpoint_picker, "port": {"number": EXT_PROC_PORT}}
    return {
        "apiVersion": f"{INFERENCE_GROUP}/{INFERENCE_VERSION}",
        "kind": "InferencePool",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


LLMD_REWRITE_API_VERSION = "llm-d.ai/v1alpha2"
REMOVED_REWRITE_API_VERSION = "inference.networking.x-k8s.io/v1alpha2"


def model_rewrite(
    name: str,
    namespace: str,
    pool: str,
    model: str,
    targets: Mapping[str, int],
    *,
    api_version: str = LLMD_REWRITE_API_VERSION,
) -> Manifest:
    """llm-d's InferenceModelRewrite (or, by `api_version`, the Inference Extension's removed one) of
    `pool` with one rule: requests for `model` rewritten to the targets, by their weights (1 or more
    each: the API forbids 0)."""
    return {
        "apiVersion": api_version,
        "kind": "InferenceModelRewrite",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "poolRef": {"group": INFERENCE_GROUP, "kind": "InferencePool", "name": pool},
            "rules": [
                {
                    "matches": [{"model": {"type": "Exact", "value": model}}],
                    "targets": [{"modelRewrite": target, "weight": w} for target, w in targets.items()],
                }
            ],
        },
    }


def pool_http_route(
    name: str, namespace: str, weights: Mapping[str, int], gateway: str = "inference"
) -> Manifest:
    """One rule whose backendRefs are the given InferencePools, with their weights."""
    route = http_route(name, namespace, dict(weights), gateway)
    for ref in route["spec"]["rules"][0]["backendRefs"]:
        del ref["port"]  # a Service's; an InferencePool has its own targetPorts
        ref.update(group=INFERENCE_GROUP, kind="InferencePool")
    return route


def selected_pods(pool: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> list[str]:
    """The names of the Ready Pods (not being deleted) that the pool's matchLabels select, sorted."""
    wanted = ((pool.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    return sorted(
        pod["metadata"]["name"]
        for pod in pods
        if not pod["metadata"].get("deletionTimestamp")
        and wanted.items() <= (pod["metadata"].get("labels") or {}).items()
        and any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (pod.get("status") or {}).get("conditions") or []
        )
    )


def pool_targets(
    api_client: client.ApiClient, namespace: str, pools: Sequence[str], double_urls: Mapping[str, str]
) -> dict[str, list[str]]:
    """For each pool, the URLs of the doubles serving the Pods it selects (`double_urls`: Pod name ->
    URL). A selected Pod without a double is left out, as a gateway would find no endpoint there."""
    objects = client.CustomObjectsApi(api_client)
    response: Any = client.CoreV1Api(api_client).list_namespaced_pod(namespace, _preload_content=False)
    listed = json.loads(response.data)["items"]
    targets: dict[str, list[str]] = {}
    for name in pools:
        pool: Any = objects.get_namespaced_custom_object(
            INFERENCE_GROUP, INFERENCE_VERSION, namespace, INFERENCE_POOLS, name
        )
        targets[name] = [double_urls[pod] for pod in selected_pods(pool, listed) if pod in double_urls]
    return targets
