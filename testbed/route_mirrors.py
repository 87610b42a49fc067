"""What a gateway mirrors in the bed: the RequestMirror filters of an HTTPRoute rule, and which requests
each copies. Pure, so the traffic driver only sends; a copy's answer is discarded, as a gateway does."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Mirrors = dict[str, float]
"""Backend name -> the percentage of the rule's requests copied to it."""

REQUEST_MIRROR = "RequestMirror"
FULL_COPY = 100.0  # a RequestMirror without percent or fraction copies every request


def parse_mirrors(route: Mapping[str, Any], rule_index: int = 0) -> Mirrors:
    """The shares rule `rule_index` copies to each backend (those of several filters to one backend
    add up, at most 100%); an absent rule mirrors nothing."""
    rules = route.get("spec", {}).get("rules") or []
    if not 0 <= rule_index < len(rules):
        return {}
    mirrors: Mirrors = {}
    for entry in rules[rule_index].get("filters") or []:
        mirror = entry.get("requestMirror") or {}
        backend = (mirror.get("backendRef") or {}).get("name")
        if entry.get("type") == REQUEST_MIRROR and isinstance(backend, str):
            mirrors[backend] = min(FULL_COPY, mirrors.get(backend, 0.0) + _percent(mirror))
    return mirrors


def _percent(mirror: Mapping[str, Any]) -> float:
    if "percent" in mirror:
        return float(mirror["percent"])
    fraction = mirror.get("fraction")
    if fraction is not None:
        return FULL_COPY * float(fraction.get("numerator", 0)) / float(fraction.get("denominator", 100))
    return FULL_COPY


class MirrorSampler:
    """Which requests are copied where: each backend gets exactly its share of the requests, spread
    evenly (a credit per backend, as the smooth weighted round robin does), so counts are exact."""

    def __init__(self) -> None:
        self.set_mirrors({})

    def set_mirrors(self, mirrors: Mapping[str, float]) -> None:
        self._shares = {name: percent / FULL_COPY for name, percent in mirrors.items() if percent > 0}
        self._credit = dict.fromkeys(self._shares, 0.0)

    def mirrors(self) -> Mirrors:
        return {name: share * FULL_COPY for name, share in self._shares.items()}

    def pick(self) -> list[str]:
        """The backends that get a copy of the next request."""
        chosen = []
        for name, share in self._shares.items():
            self._credit[name] += share
            if self._credit[name] >= 1 - 1e-9:
                self._credit[name] -= 1
                chosen.append(name)
        return chosen
