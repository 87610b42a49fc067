"""The traffic a manifest says it is sized for, in annotations `modelgate plan` reads.

What a manifest says about the traffic it is sized for, in annotations `modelgate plan` reads, so
that the plan of a rollout needs no numbers beside it:

    metadata:
      annotations:
        modelgate.io/plan-rps: "100"          # requests per second, both sides together
        modelgate.io/plan-base-rate: "0.01"   # the incumbent's share of failing requests
        modelgate.io/plan-exempt: "why the rollout is not meant to hold the plan's bounds"

The operator ignores them; `--rps` and `--base-rate` override them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

RPS_ANNOTATION = "modelgate.io/plan-rps"
BASE_RATE_ANNOTATION = "modelgate.io/plan-base-rate"
EXEMPT_ANNOTATION = "modelgate.io/plan-exempt"


@dataclass(frozen=True)
class Assumptions:
    requests_per_second: float | None
    base_rate: float | None
    exempt: str | None  # why the rollout is not meant to meet the plan's bounds, as its author says


def assumptions(manifest: dict[str, Any]) -> Assumptions:
    """The manifest's annotations; ValueError naming the annotation when one is not a number."""
    annotations = (manifest.get("metadata") or {}).get("annotations") or {}
    exempt = str(annotations.get(EXEMPT_ANNOTATION, "")).strip() or None
    return Assumptions(
        _number(annotations, RPS_ANNOTATION), _number(annotations, BASE_RATE_ANNOTATION), exempt
    )


def _number(annotations: dict[str, Any], key: str) -> float | None:
    text = annotations.get(key)
    if text is None:
        return None
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise ValueError(f"annotation {key}: expected a number, got {text!r}")
    return value
