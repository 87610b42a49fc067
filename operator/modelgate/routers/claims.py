"""A rollout's claim on the route rules it steers: one annotation per rule.

A rollout's claim on the route rules it steers: one annotation per rule on the route object,
`modelgate.io/owner.<list>.<index>` (`owner.rules.0`: rule 0 of an HTTPRoute), whose value names the
rollout ({"namespace", "name", "uid"} as JSON). Written in the same patch as the weights, guarded by
the resourceVersion that was read, so two rollouts never both claim a rule; kept on the object, so
every replica and shard of the operator sees the same owner. What a claim allows is the engine's
(core/holds.py); a router writes over another rollout's claim only when the tick decided on
that very claim (it read it, and judged its owner ended)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import structlog
from pydantic import ValidationError

from modelgate import API_GROUP
from modelgate.api import RolloutRef

log = structlog.get_logger("modelgate.routers")
CLAIM_PREFIX = f"{API_GROUP}/owner."


def claim_keys(weights_list: str, indexes: Iterable[int]) -> tuple[str, ...]:
    """The annotations that claim these items of `spec.<weights_list>` (rules, http routes)."""
    return tuple(f"{CLAIM_PREFIX}{weights_list}.{index}" for index in indexes)


def owners(obj: Mapping[str, Any], keys: Iterable[str]) -> frozenset[RolloutRef]:
    """The rollouts that claim these keys on `obj`. A value that names no rollout (edited by hand) is
    no claim: the next write replaces it."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    found = set()
    for key in keys:
        value = annotations.get(key)
        if value is None:
            continue
        try:
            found.add(RolloutRef.model_validate_json(value))
        except ValidationError:
            log.warning("a route claim names no rollout; the next write replaces it", annotation=key)
    return frozenset(found)


def claim_patch(obj: Mapping[str, Any], keys: Iterable[str], owner: RolloutRef) -> list[dict[str, Any]]:
    """JSON patch operations that make `owner` the claimant of every key (none for a key it holds)."""
    annotations = (obj.get("metadata") or {}).get("annotations")
    value = owner.model_dump_json(by_alias=True)
    ops: list[dict[str, Any]] = []
    if annotations is None:
        ops.append({"op": "add", "path": "/metadata/annotations", "value": {}})
    for key in keys:
        if (annotations or {}).get(key) != value:
            ops.append({"op": "add", "path": f"/metadata/annotations/{_pointer(key)}", "value": value})
    return ops


def _pointer(key: str) -> str:
    """A JSON pointer's reference token (RFC 6901): `~` and `/` escaped."""
    return key.replace("~", "~0").replace("/", "~1")
