"""A rollout's timeline as data, for the pictures of `modelgate report` and `modelgate replay`.

A rollout's timeline as data, for the pictures of `modelgate report` and `modelgate replay`: the
candidate's weight over time, the step starts, every metric against its bounds, the Events, and the
status fields worth reading (shown generically, so that fields added to status appear unchanged)."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from modelgate.api import Comparison, ModelRolloutSpec, ModelRolloutStatus, Phase
from modelgate.cli.render.analysis import threshold_text
from modelgate.cli.report.units import preset_unit, shown

Points = tuple[tuple[float, float], ...]  # (unix seconds, value), oldest first


@dataclass(frozen=True)
class Mark:
    """A moment drawn across every chart: a step's start, a rollback."""

    time: float
    label: str
    kind: str  # "step" or "rollback"


@dataclass(frozen=True)
class MetricTrace:
    name: str
    query: str
    candidate: Points
    incumbent: Points = ()
    bounds: tuple[tuple[str, float], ...] = ()  # ("max", 0.01), ("min", ...): the fixed thresholds
    rule: str = ""  # the whole rule in words (compare, sequential, dry run)
    verdicts: tuple[
        tuple[float, float | None, str], ...
    ] = ()  # evaluations status kept: time, value, verdict
    error: str | None = None  # why the range could not be had
    # Thresholds that move with the incumbent (compare: maxRatio, maxIncrease), over time.
    relative: tuple[tuple[str, Points], ...] = ()
    unit: str = ""  # the preset's ("ratio", "seconds", ...); "" for a query of the user's own


@dataclass(frozen=True)
class EventRow:
    time: float
    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class Timeline:
    title: str
    summary: tuple[tuple[str, str], ...]  # label, text
    start: float
    end: float
    weights: Points
    weight_source: str
    marks: tuple[Mark, ...]
    metrics: tuple[MetricTrace, ...]
    events: tuple[EventRow, ...] = ()
    details: tuple[tuple[str, Any], ...] = ()  # a heading and a JSON-like value, shown as it is
    outcome: str = ""  # how it ended, or where it is, and why: one sentence
    breached: str | None = None  # the metric the rollback names, charted first
    # The rollouts this object ran before this one: candidate, start, outcome (not drawn).
    earlier: tuple[tuple[str, str, str], ...] = ()
    # Whose values the candidate's queries read: the incumbent's in an A/A replay.
    candidate_label: str = "candidate"


def seconds(moment: datetime) -> float:
    return moment.timestamp()


def metric_traces(
    spec: ModelRolloutSpec,
    spec_body: Mapping[str, Any],
    status: ModelRolloutStatus,
    ranges: Mapping[str, tuple[str, Points, Points, str | None]],
) -> tuple[MetricTrace, ...]:
    """One trace per metric of the spec: `ranges[name]` is its query, the candidate's and the
    incumbent's values over the span, and the error of fetching them, if any."""
    assert spec.analysis is not None
    bodies = {m["name"]: m for m in (spec_body.get("analysis") or {}).get("metrics", [])}
    kept = {m.name: m for m in status.analysis}
    traces = []
    for metric in spec.analysis.metrics:
        query, candidate, incumbent, error = ranges[metric.name]
        bounds = tuple((k, v) for k, v in (("max", metric.max), ("min", metric.min)) if v is not None)
        record = kept.get(metric.name)
        verdicts = tuple(
            (seconds(s.time), s.value, str(s.verdict)) for s in (record.history if record is not None else ())
        )
        relative = _relative_limits(metric.compare, incumbent) if metric.compare is not None else ()
        unit = preset_unit(metric.preset)
        traces.append(
            MetricTrace(
                metric.name,
                query,
                candidate,
                incumbent,
                bounds,
                # In the unit the section's chart and heading use: one unit a section.
                threshold_text(bodies.get(metric.name, {}), functools.partial(shown, unit=unit)),
                verdicts,
                error,
                relative,
                unit,
            )
        )
    return tuple(traces)


def _relative_limits(compare: Comparison, incumbent: Points) -> tuple[tuple[str, Points], ...]:
    """The candidate's limit at each moment of the incumbent's range, as the comparison sets it."""
    limits = []
    if compare.max_ratio is not None:
        ratio = compare.max_ratio
        limits.append((f"{ratio:g} x incumbent", tuple((t, v * ratio) for t, v in incumbent)))
    if compare.max_increase is not None:
        increase = compare.max_increase
        limits.append((f"incumbent + {increase:g}", tuple((t, v + increase) for t, v in incumbent)))
    if compare.min_ratio is not None:
        floor = compare.min_ratio
        limits.append((f"{floor:g} x incumbent", tuple((t, v * floor) for t, v in incumbent)))
    return tuple(limits)


def weights_from_status(status: ModelRolloutStatus, start: float) -> Points:
    """The candidate's weight from the rollout's start, at each change it asked for
    (status.weightChanges; a gradual rollback's descent included)."""
    origin = status.rollout_started_at
    if origin is None:
        return ((start, 0.0),)
    return ((start, 0.0), *((seconds(origin) + c.seconds, float(c.weight)) for c in status.weight_changes))


def steps_from_status(status: ModelRolloutStatus) -> dict[int, float]:
    """When each step started (status.stepStarts, by step index)."""
    origin = status.rollout_started_at
    if origin is None:
        return {}
    return {index: seconds(origin) + offset for index, offset in enumerate(status.step_starts)}


def step_marks(
    spec_body: Mapping[str, Any], started: Mapping[int, float], labels: Sequence[str]
) -> list[Mark]:
    steps = spec_body.get("steps", [])
    return [
        Mark(time, f"step {index}: {labels[index]}", "step")
        for index, time in sorted(started.items())
        if index < len(steps)
    ]


def rollback_mark(status: ModelRolloutStatus) -> list[Mark]:
    reason = status.rollback_reason
    if status.phase is not Phase.ROLLED_BACK or reason is None:
        return []
    return [Mark(seconds(reason.time), f"rollback: {reason.metric or 'see reason'}", "rollback")]
