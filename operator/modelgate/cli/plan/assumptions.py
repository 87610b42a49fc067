"""The traffic a manifest says it is sized for, in annotations `modelgate plan` reads.

What a manifest says about the traffic it is sized for, in annotations `modelgate plan` reads, so
that the plan of a rollout needs no numbers beside it:

    metadata:
      annotations:
        modelgate.io/plan-rps: "100"          # requests per second, both sides together
        modelgate.io/plan-base-rate: "0.01"   # the incumbent's share of failing requests
        modelgate.io/plan-exempt: "why the rollout is not meant to hold the plan's bounds"
        modelgate.io/plan-latency: "ttftP99=0.057"  # the incumbent's latency quantiles, seconds

The operator ignores them; `--rps`, `--base-rate` and `--latency` override them."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from modelgate.api import LATENCY_PRESETS

RPS_ANNOTATION = "modelgate.io/plan-rps"
BASE_RATE_ANNOTATION = "modelgate.io/plan-base-rate"
EXEMPT_ANNOTATION = "modelgate.io/plan-exempt"
LATENCY_ANNOTATION = "modelgate.io/plan-latency"


@dataclass(frozen=True)
class Assumptions:
    requests_per_second: float | None
    base_rate: float | None
    exempt: str | None  # why the rollout is not meant to meet the plan's bounds, as its author says
    latencies: dict[str, float]  # the incumbent's value of each latency preset's quantile, seconds


def assumptions(manifest: dict[str, Any]) -> Assumptions:
    """The manifest's annotations; ValueError naming the annotation when one is not a number."""
    annotations = (manifest.get("metadata") or {}).get("annotations") or {}
    exempt = str(annotations.get(EXEMPT_ANNOTATION, "")).strip() or None
    latencies = latency_values(str(annotations.get(LATENCY_ANNOTATION, "")).split(","), LATENCY_ANNOTATION)
    return Assumptions(
        _number(annotations, RPS_ANNOTATION), _number(annotations, BASE_RATE_ANNOTATION), exempt, latencies
    )


def latency_values(items: list[str], source: str) -> dict[str, float]:
    """`preset=seconds` items (blank ones skipped); ValueError naming `source` and what it expects."""
    values = {}
    for item in (i.strip() for i in items):
        if not item:
            continue
        preset, _, text = item.partition("=")
        try:
            seconds = float(text)
        except ValueError:
            seconds = math.nan
        if preset.strip() not in LATENCY_PRESETS or not (math.isfinite(seconds) and seconds > 0):
            raise ValueError(
                f"{source}: expected PRESET=SECONDS, PRESET one of {', '.join(LATENCY_PRESETS)} and "
                f"SECONDS positive, got {item!r}"
            )
        values[preset.strip()] = seconds
    return values


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
