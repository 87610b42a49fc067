"""Watch-fed caches of what the operator reads every tick, so a tick reads memory.

Watch-fed caches: the latest copy of each object the operator reads every tick (its rollouts, their
routes, their Deployments), so a tick reads memory, not the API server.

Fed from two sides: kopf's watch events, and the objects the API server returns for the operator's
own writes. The newer copy wins by resourceVersion, so a watch event that predates our write (the
watch can lag) never replaces what we wrote. A miss is not "absent": the caller reads the API server.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

Object = dict[str, Any]
Key = tuple[str, str]  # namespace, name


def _version(obj: Mapping[str, Any]) -> int | None:
    # resourceVersions are etcd revisions, integers in every API server in use; were one not, the
    # copy at hand is simply replaced (as an informer does).
    try:
        return int(obj["metadata"]["resourceVersion"])
    except (KeyError, TypeError, ValueError):
        return None


class ObjectCache:
    """Thread-safe: written on the event loop, read by the worker threads that run ticks."""

    def __init__(self, project: Callable[[Mapping[str, Any]], Object] = dict) -> None:
        self._project = project  # what of an object to keep
        self._objects: dict[Key, Object] = {}
        self._lock = threading.Lock()

    def put(self, obj: Mapping[str, Any]) -> None:
        meta = obj["metadata"]
        key = (str(meta.get("namespace", "")), str(meta["name"]))
        new = _version(obj)
        with self._lock:
            held = self._objects.get(key)
            old = None if held is None else _version(held)
            if new is None or old is None or new >= old:
                self._objects[key] = self._project(obj)

    def delete(self, namespace: str, name: str) -> None:
        with self._lock:
            self._objects.pop((namespace, name), None)

    def get(self, namespace: str, name: str) -> Object | None:
        with self._lock:
            return self._objects.get((namespace, name))

    def __len__(self) -> int:
        return len(self._objects)


def deployment_essentials(deployment: Mapping[str, Any]) -> Object:
    """What availability and listing its Pods need of a Deployment: the cache holds every Deployment
    in scope, so it keeps only this (a few hundred bytes each), not the pod template."""
    meta = deployment.get("metadata") or {}
    return {
        "metadata": {
            key: meta[key] for key in ("namespace", "name", "resourceVersion", "generation") if key in meta
        },
        # The selector names its Pods: a breach's evidence reads the metric per Pod.
        "spec": {key: (deployment.get("spec") or {}).get(key) for key in ("replicas", "selector")},
        "status": dict(deployment.get("status") or {}),
    }
