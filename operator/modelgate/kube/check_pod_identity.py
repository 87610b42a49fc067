"""Which Pods are a check Job's own, whose termination message the operator may read as the check's
result. Pure: no client calls.

The Job controller adopts an orphan that carries the Job's labels, so a Pod a tenant planted can
become controlled by the Job. Its whole spec must then be the Job's Pod template: not only the
check container's command, but every field that changes what the container reads or reaches
(`volumes` naming another ConfigMap, `hostAliases` sending the model's Service name to another
server, `initContainers` writing into the scratch volume, `dnsConfig`, `envFrom`, another
container). Only what Kubernetes itself writes on a Pod and not on its template is left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from modelgate.kube.check_shards import without_injected_index

# Written on the Pod, not its template: by the scheduler (nodeName), admission plugins
# (DefaultTolerationSeconds, Priority, RuntimeClass, the ServiceAccount's deprecated mirror), and
# the Job controller for an Indexed Job's Pods (hostname, subdomain).
_SET_ON_THE_POD = frozenset(
    {
        "nodeName",
        "tolerations",
        "priority",
        "priorityClassName",
        "preemptionPolicy",
        "overhead",
        "serviceAccount",
        "hostname",
        "subdomain",
    }
)
# Set on a container by LimitRanger; the check's limits are held by the check's policy.
_SET_ON_THE_CONTAINER = frozenset({"resources"})
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
# The ServiceAccount admission plugin names `default` on a Pod whose template names none.
_DEFAULT_ACCOUNT = "default"


def _container(container: Mapping[str, Any]) -> dict[str, Any]:
    """A container as its template has it: without the index variable the Job controller adds to
    every container of an Indexed Job's Pods (the same for all, so no Pod can pass off others)."""
    kept = {key: value for key, value in container.items() if key not in _SET_ON_THE_CONTAINER}
    if "env" in kept:
        kept["env"] = without_injected_index(kept["env"]) or None
    return {key: value for key, value in kept.items() if value is not None}


def pod_identity(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of a Pod's spec (or a Pod template's) that must be the template's; empty lists
    and unset fields alike are absent."""
    identity: dict[str, Any] = {
        key: value
        for key, value in spec.items()
        if key not in _SET_ON_THE_POD and key not in _CONTAINER_LISTS and value not in (None, [], {})
    }
    identity["serviceAccountName"] = spec.get("serviceAccountName") or _DEFAULT_ACCOUNT
    for key in _CONTAINER_LISTS:
        containers = [_container(c) for c in spec.get(key) or []]
        if containers:
            identity[key] = containers
    return identity


def own_pods(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The Pods that are the Job's own: controlled by it (its uid, not a label anyone can copy) and
    with its template's spec, field for field (`pod_identity`)."""
    uid = job["metadata"].get("uid")
    template = pod_identity(job["spec"]["template"].get("spec") or {})

    def owned(pod: Mapping[str, Any]) -> bool:
        owners = pod["metadata"].get("ownerReferences") or []
        return any(o.get("controller") and o.get("uid") == uid for o in owners)

    return [pod for pod in pods if owned(pod) and pod_identity(pod.get("spec") or {}) == template]
