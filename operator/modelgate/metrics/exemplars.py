"""A breach's evidence from Prometheus: exemplar trace IDs, and the metric per pod.

A breach's evidence from Prometheus's answers: exemplars (`/api/v1/query_exemplars`) as trace IDs
with their pods, and the breaching metric's value per pod, each ranked worst first."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from modelgate.api import BreachTrace, PodValue

# The labels OpenTelemetry SDKs and Prometheus clients put a trace ID under.
TRACE_ID_LABELS = ("trace_id", "traceID", "traceId", "trace-id")
TRACES_KEPT = 5
PODS_KEPT = 20


def parse_exemplars(data: object) -> list[BreachTrace]:
    """`data` of a query_exemplars answer: [{seriesLabels, exemplars: [{labels, value, timestamp}]}].
    Exemplars without a trace ID label are left out; so is anything malformed."""
    traces = []
    for series in data if isinstance(data, list) else []:
        if not isinstance(series, Mapping):
            continue
        labels = series.get("seriesLabels") or {}
        for exemplar in series.get("exemplars") or []:
            trace = _trace(exemplar, labels.get("pod"))
            if trace is not None:
                traces.append(trace)
    return traces


def _trace(exemplar: Any, pod: object) -> BreachTrace | None:
    if not isinstance(exemplar, Mapping):
        return None
    labels = exemplar.get("labels") or {}
    trace_id = next((str(labels[key]) for key in TRACE_ID_LABELS if labels.get(key)), None)
    if trace_id is None or len(trace_id) > 128:
        return None
    try:
        value: float | None = float(exemplar["value"])
        time: datetime | None = datetime.fromtimestamp(float(exemplar["timestamp"]), UTC)
    except (KeyError, TypeError, ValueError, OverflowError):
        value, time = None, None
    if value is not None and not math.isfinite(value):
        value = None
    return BreachTrace(trace_id=trace_id, pod=pod if isinstance(pod, str) else None, value=value, time=time)


def worst_traces(traces: Sequence[BreachTrace], kept: int = TRACES_KEPT) -> tuple[BreachTrace, ...]:
    """The highest values first (the slowest requests on a latency histogram; on a counter every
    value is 1), then the latest; one per trace ID."""
    unique: dict[str, BreachTrace] = {}
    for trace in traces:
        unique.setdefault(trace.trace_id, trace)
    never = datetime.min.replace(tzinfo=UTC)
    ranked = sorted(
        unique.values(),
        key=lambda t: (t.value if t.value is not None else -math.inf, t.time or never),
        reverse=True,
    )
    return tuple(ranked[:kept])


def worst_pods(values: Mapping[str, float | None], *, lower_is_worse: bool) -> tuple[PodValue, ...]:
    """Pods by how badly the metric stands on each: highest first for a maximum, lowest first for a
    minimum; pods without a value last."""
    measured = {pod: v for pod, v in values.items() if v is not None and math.isfinite(v)}
    ranked = sorted(measured, key=lambda pod: measured[pod], reverse=not lower_is_worse)
    ranked += sorted(pod for pod in values if pod not in measured)
    return tuple(PodValue(pod=pod, value=measured.get(pod)) for pod in ranked[:PODS_KEPT])


def pod_regex(pod: str) -> str:
    """A pod name as a podRegex that matches it alone (`[.]` for a dot: no backslashes in a podRegex)."""
    return pod.replace(".", "[.]")
