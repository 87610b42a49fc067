"""The candidate's RequestMirror filter in a Gateway API route rule: read, set or removed.

The candidate's RequestMirror filter in one Gateway API route rule: reading it, and the JSON patch
operations that set or remove it (made part of the weight patch, under its resourceVersion test).

The operator owns at most one filter per rule: a RequestMirror whose backendRef is the candidate's
backend and whose share is a `percent` (what the operator writes). Every other filter stays as its
owner left it. Another RequestMirror that copies to the candidate too (by `fraction`, or a second
one) is someone else's: the operator reports it and adds no mirror of its own beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from modelgate.core import Reason, RouteProblem

REQUEST_MIRROR = "RequestMirror"
FULL_COPY = 100  # Gateway API: a RequestMirror without percent or fraction copies every request
BACKEND_REF_KEYS = ("group", "kind", "name", "namespace", "port")

JsonPatch = list[dict[str, Any]]


@dataclass(frozen=True)
class CandidateMirrors:
    own_index: int | None
    """Where the operator's filter is in the rule's filters; None without one."""
    percent: int
    """The share the operator's filter copies to the candidate; 0 without one."""
    others: tuple[int, ...]
    """The indexes of other filters that copy to the candidate."""


def candidate_mirrors(
    rule: Mapping[str, Any], to_candidate: Callable[[Mapping[str, Any]], bool]
) -> CandidateMirrors:
    """The RequestMirror filters of `rule` whose backendRef `to_candidate` accepts."""
    filters: Sequence[Mapping[str, Any]] = rule.get("filters") or []
    own: int | None = None
    others: list[int] = []
    for index, entry in enumerate(filters):
        mirror = entry.get("requestMirror") or {}
        if entry.get("type") != REQUEST_MIRROR or not to_candidate(mirror.get("backendRef") or {}):
            continue
        if own is None and "fraction" not in mirror:
            own = index
        else:
            others.append(index)
    percent = 0 if own is None else int(filters[own]["requestMirror"].get("percent", FULL_COPY))
    return CandidateMirrors(own, percent, tuple(others))


def mirror_patch(
    where: str,
    rule_path: str,
    rule: Mapping[str, Any],
    candidate_ref: Mapping[str, Any],
    mirrors: CandidateMirrors,
    percent: int,
) -> JsonPatch | RouteProblem:
    """The operations that make the rule at `rule_path` (a JSON pointer; `where` names it for people)
    copy `percent` of its requests to the backend `candidate_ref` (0: no copy), given what
    `candidate_mirrors` found in it; none when it already does. A RouteProblem, and no operations,
    when someone else's filter copies to the candidate and a mirror is asked for."""
    filters = f"{rule_path}/filters"
    if percent == mirrors.percent:
        return []
    if percent == 0:
        assert mirrors.own_index is not None
        last = len(rule.get("filters") or []) == 1  # leave the rule without `filters`, as it was
        return [{"op": "remove", "path": filters if last else f"{filters}/{mirrors.own_index}"}]
    if mirrors.others:
        positions = ", ".join(f"filters[{index}]" for index in mirrors.others)
        return RouteProblem(
            Reason.WEIGHT_NOT_APPLIED,
            f"{where}: {positions} already copies requests to the candidate and was not written by"
            " modelgate (a fraction, or a second RequestMirror); it is left alone, so no mirror step"
            " can run: remove it",
        )
    if mirrors.own_index is not None:
        own = f"{filters}/{mirrors.own_index}"
        return [{"op": "add", "path": f"{own}/requestMirror/percent", "value": percent}]
    backend = {key: candidate_ref[key] for key in BACKEND_REF_KEYS if key in candidate_ref}
    entry = {"type": REQUEST_MIRROR, "requestMirror": {"backendRef": backend, "percent": percent}}
    if rule.get("filters"):
        return [{"op": "add", "path": f"{filters}/-", "value": entry}]
    return [{"op": "add", "path": filters, "value": [entry]}]
