"""The candidate's mirror in an Istio VirtualService route: read, set or removed.

The candidate's mirror in one http route of an Istio VirtualService: reading it, and the JSON patch
operations that set or remove it (made part of the weight patch, under its resourceVersion test), as
mirror_filter.py does for a Gateway API rule.

The operator's mirror is the http route's `mirror` when it is the candidate's destination; its share is
`mirrorPercentage.value` (all requests without it), a whole number as the operator writes it. Any
other copy to the candidate (such a `mirror` with a fractional share or the deprecated
`mirrorPercent`, or an entry of `mirrors`) is someone else's, and so is a `mirror` to another
destination: the operator reports them when a mirror is asked for, and writes none of its own beside
them, nor over them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelgate.core import Reason, RouteProblem
from modelgate.routers.patched import JsonPatch

FULL_COPY = 100  # Istio: a `mirror` without mirrorPercentage copies every request
DESTINATION_KEYS = ("host", "subset", "port")
DEPRECATED_PERCENT = ("mirrorPercent", "mirror_percent")
MIRROR_KEYS = ("mirror", "mirrorPercentage")


@dataclass(frozen=True)
class HttpMirror:
    own: bool
    """Whether the http route's `mirror` is the operator's."""
    percent: int
    """The share the operator's mirror copies to the candidate; 0 without one."""
    taken_by: str | None
    """Someone else's copy in the way of a mirror of the operator's; None when there is none."""


NO_MIRROR = HttpMirror(own=False, percent=0, taken_by=None)


def http_mirror(http: Mapping[str, Any], to_candidate: Callable[[Mapping[str, Any]], bool]) -> HttpMirror:
    """The operator's mirror in the http route `http`, and what else mirrors there; `to_candidate`
    tells whether a destination is the candidate's."""
    mirror: Mapping[str, Any] = http.get("mirror") or {}
    value = (http.get("mirrorPercentage") or {}).get("value", FULL_COPY)
    others: Sequence[Mapping[str, Any]] = http.get("mirrors") or []
    copies = [
        f"mirrors[{i}]" for i, entry in enumerate(others) if to_candidate(entry.get("destination") or {})
    ]
    found = NO_MIRROR
    if mirror and not to_candidate(mirror):
        found = HttpMirror(False, 0, f"mirror copies requests to {mirror.get('host')}")
    elif mirror:
        whole = isinstance(value, int | float) and float(value).is_integer() and 0 <= value <= FULL_COPY
        if whole and not any(key in http for key in DEPRECATED_PERCENT):
            found = HttpMirror(True, int(value), None)
        else:
            found = HttpMirror(False, 0, "mirror copies a share of requests to the candidate in another form")
    if copies:
        taken_by = ", ".join(copies) + " copy requests to the candidate"
        found = HttpMirror(found.own, found.percent, taken_by)
    return found


def http_mirror_patch(
    where: str,
    http_path: str,
    http: Mapping[str, Any],
    candidate: Mapping[str, Any],
    mirror: HttpMirror,
    percent: int,
) -> JsonPatch | RouteProblem:
    """The operations that make the http route `http` at `http_path` (a JSON pointer; `where` names
    it for people) copy `percent` of its requests to the `candidate` destination (0: no copy), given
    what `http_mirror` found in it; none when it already does. A RouteProblem, and no operations,
    when someone else's copy is in the way and a mirror is asked for."""
    if percent == mirror.percent:
        return []
    if percent == 0:
        return [{"op": "remove", "path": f"{http_path}/{key}"} for key in MIRROR_KEYS if key in http]
    if mirror.taken_by is not None:
        return RouteProblem(
            Reason.WEIGHT_NOT_APPLIED,
            f"{where}: {mirror.taken_by}, not written by modelgate; it is left alone, so no mirror step"
            " can run: remove it",
        )
    share = {"op": "add", "path": f"{http_path}/mirrorPercentage", "value": {"value": percent}}
    if mirror.own:
        return [share]
    destination = {key: candidate[key] for key in DESTINATION_KEYS if key in candidate}
    return [{"op": "add", "path": f"{http_path}/mirror", "value": destination}, share]
