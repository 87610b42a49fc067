"""What `modelgate plan` says of the latency form: when each step's share decides it.

What `modelgate plan` says of the latency form (compare.confidence on ttftP50, ttftP99, tpotP99 or
latencyP99), which the engine's simulation cannot draw: at each weight the rollout's steps set and
the planned traffic, when a candidate `--regression` times slower fails and when one as fast as the
incumbent passes the margin, by cli/plan/latency_estimate.py's expected counts (docs/statistics.md's table
sets them beside a seeded simulation's medians). The incumbent's quantile is the user's
(`--latency`, or the manifest's modelgate.io/plan-latency); without it the metric is listed as not
estimated."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from modelgate.api import LATENCY_QUANTILES, MetricSpec, ModelRolloutSpec
from modelgate.cli.plan import latency_estimate
from modelgate.cli.plan.figures import Traffic, step_shares


@dataclass(frozen=True)
class LatencyStep:
    """At one share, from the rollout's start with the share held: the seconds and candidate
    requests to Fail the slower candidate (None: never, or no maxRatio) and to Pass the as-fast one
    (None: never; 0: no margin, it passes while no harm is shown). The first evaluation is a
    baseline, counted in the seconds."""

    step: int  # the first step at this share
    share: float
    fail_seconds: float | None
    fail_candidate_requests: float | None
    pass_seconds: float | None
    pass_candidate_requests: float | None


@dataclass(frozen=True)
class LatencyEstimate:
    """One metric of the latency form: its steps' estimates at the incumbent's quantile."""

    metric: str
    preset: str
    incumbent_seconds: float | None  # the incumbent's quantile as given; None: not given, no steps
    slowdown: float  # the slower candidate's latencies / the incumbent's
    steps: tuple[LatencyStep, ...]


def latency_estimates(
    spec: ModelRolloutSpec, traffic: Traffic, incumbent: dict[str, float]
) -> list[LatencyEstimate]:
    """One per metric of the latency form that decides (not dryRun), at each share its steps set."""
    assert spec.analysis is not None
    interval = spec.analysis.interval_timedelta.total_seconds()
    estimates = []
    for metric in spec.analysis.metrics:
        if not metric.bounds_quantile or metric.dry_run or metric.preset is None:
            continue
        value = incumbent.get(metric.preset)
        steps = () if value is None else _steps(spec, _comparison(metric), value, traffic, interval)
        estimates.append(LatencyEstimate(metric.name, metric.preset, value, traffic.regression, steps))
    return estimates


def _comparison(metric: MetricSpec) -> latency_estimate.Comparison:
    compare, preset = metric.compare, metric.preset or ""
    assert compare is not None and compare.confidence is not None
    confidence = compare.confidence
    return latency_estimate.Comparison(
        latency_estimate.GRIDS[preset],
        LATENCY_QUANTILES[preset],
        confidence.alpha,
        compare.max_ratio,
        confidence.margin,
    )


def _steps(
    spec: ModelRolloutSpec, rule: latency_estimate.Comparison, value: float, traffic: Traffic, interval: float
) -> tuple[LatencyStep, ...]:
    per_look = traffic.requests_per_second * interval
    as_fast = latency_estimate.exceedance_at(value, rule.quantile, rule.grid)
    slower = latency_estimate.exceedance_at(value, rule.quantile, rule.grid, traffic.regression)
    steps, seen = [], set()
    for index, share in enumerate(step_shares(spec)):
        if share <= 0 or share in seen:
            continue
        seen.add(share)
        fail = latency_estimate.looks_to_fail(rule, slower, as_fast, per_look, share)
        passed = 0 if rule.margin is None else latency_estimate.looks_to_pass(rule, as_fast, per_look, share)
        per_candidate = per_look * share
        steps.append(
            LatencyStep(
                index, share, *_when(fail, per_candidate, interval), *_when(passed, per_candidate, interval)
            )
        )
    return tuple(steps)


def _when(looks: int | None, per_look: float, interval: float) -> tuple[float | None, float | None]:
    """Seconds (the baseline evaluation first) and candidate requests after `looks` evaluations."""
    if looks is None:
        return None, None
    if looks == 0:
        return 0.0, 0.0
    return (looks + 1) * interval, looks * per_look


def latency_lines(estimates: Sequence[LatencyEstimate], duration: Callable[[float | None], str]) -> list[str]:
    """Readable at 80 columns: a line per metric, and one per share."""
    lines = []
    for estimate in estimates:
        if estimate.incumbent_seconds is None:
            lines.append(
                f"latency form: {estimate.metric}: not estimated; give --latency "
                f"{estimate.preset}=SECONDS (the incumbent's)"
            )
            continue
        lines.append(
            f"latency form: {estimate.metric}: {estimate.preset} {estimate.incumbent_seconds:g}s "
            "(log-normal, vLLM's buckets)"
        )
        for step in estimate.steps:
            fails = "never" if step.fail_seconds is None else f"after {duration(step.fail_seconds)}"
            passes = "never" if step.pass_seconds is None else f"after {duration(step.pass_seconds)}"
            lines.append(
                f"  step {step.step}, {100 * step.share:.3g}%: {estimate.slowdown:g}x slower fails {fails}; "
                f"as fast passes {passes}"
            )
    return lines
