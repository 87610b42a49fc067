"""What a side's Pods request of an accelerator resource: pure, over Pods as the API server lists
them. No client calls here."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from modelgate.kube.check_pod_policy import quantity
from modelgate.kube.pools import pool_pod


def requested(pods: Iterable[Mapping[str, Any]], resource: str) -> float:
    """The sum, over the Ready Pods not being deleted, of each container's request of `resource` (its
    limit where it sets no request, as the API server defaults an extended resource's request to
    its limit). Init containers are left out: they have finished before the Pod is Ready."""
    total = Decimal(0)
    for pod in pods:
        seen = pool_pod(pod)
        if seen is None or not seen.ready:
            continue
        for container in (pod.get("spec") or {}).get("containers") or []:
            total += _amount(container.get("resources") or {}, resource)
    return float(total)


def _amount(resources: Mapping[str, Any], resource: str) -> Decimal:
    text = (resources.get("requests") or {}).get(resource) or (resources.get("limits") or {}).get(resource)
    return quantity(str(text)) if text is not None else Decimal(0)
