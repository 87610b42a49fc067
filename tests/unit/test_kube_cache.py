"""The watch caches a tick reads: the newer copy wins, so neither a lagging watch nor a stale read
can replace what the operator's own write returned."""

from __future__ import annotations

from typing import Any

from modelgate.kube.cache import ObjectCache, deployment_essentials
from modelgate.kube.objects import availability


def obj(version: str, weight: int, namespace: str = "serving", name: str = "chat") -> dict[str, Any]:
    return {"metadata": {"namespace": namespace, "name": name, "resourceVersion": version}, "w": weight}


def test_a_newer_copy_replaces_an_older_one_and_not_the_other_way_round() -> None:
    cache = ObjectCache()
    cache.put(obj("10", 1))
    cache.put(obj("12", 2))  # e.g. what our own status write returned
    cache.put(obj("11", 3))  # a watch event from before that write, delivered late
    held = cache.get("serving", "chat")
    assert held is not None and held["w"] == 2
    cache.put(obj("13", 4))
    held = cache.get("serving", "chat")
    assert held is not None and held["w"] == 4


def test_objects_are_kept_apart_by_namespace_and_name_and_deleted() -> None:
    cache = ObjectCache()
    cache.put(obj("1", 1))
    cache.put(obj("1", 2, namespace="other"))
    cache.put(obj("1", 3, name="chat-2"))
    assert len(cache) == 3
    cache.delete("serving", "chat")
    assert cache.get("serving", "chat") is None
    held = cache.get("other", "chat")
    assert held is not None and held["w"] == 2


def test_a_deployment_is_kept_as_what_availability_needs() -> None:
    deployment = {
        "metadata": {"namespace": "serving", "name": "chat-v2", "resourceVersion": "7", "generation": 3},
        "spec": {
            "replicas": 2,
            "template": {"spec": {"containers": [{"name": "vllm", "image": "x" * 5000}]}},
        },
        "status": {
            "observedGeneration": 3,
            "replicas": 2,
            "updatedReplicas": 2,
            "availableReplicas": 2,
            "conditions": [{"type": "Available", "status": "True"}],
        },
    }
    kept = deployment_essentials(deployment)
    assert "template" not in kept["spec"]
    assert availability("Deployment serving/chat-v2", kept) == availability(
        "Deployment serving/chat-v2", deployment
    )
    assert availability("d", kept).available
