"""What metric providers produce (one number per query, or why not), one metric's verdict in one
evaluation, and what a run's numbers alone say: each side's cost, and the chance that a rule rolls
back a candidate as good as the incumbent. Failures are data, never exceptions, so the engine
decides what a failed query means for the rollout. Beside them, what the operator found of a one-edit
rollout's generated candidate.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum
from itertools import accumulate

from modelgate.api import (
    RATE_PRESETS,
    AnalysisSpec,
    BreachRule,
    ConfidenceBounds,
    FalseRollbackWarning,
    MetricAnalysis,
    MetricSpec,
    ModelRolloutSpec,
    ModelRolloutStatus,
    QuantileBounds,
    Step,
    Verdict,
)
from modelgate.api.accelerators import SideAccelerators
from modelgate.api.analysis import MAX_MIN_REQUESTS
from modelgate.api.cost_status import CostStatus, SideCost
from modelgate.api.series import MissingSeries
from modelgate.api.status import MAX_WARNINGS

# -- results ---------------------------------------------------------------------------------------
# What metric providers produce: one number per query, or why not. Failures are data, never exceptions, so the
# engine decides what a failed query means for the rollout.


@dataclass(frozen=True)
class QueryResult:
    """The outcome of one query.

    value: the single sample, or None when the query matched nothing or failed. NaN is kept as NaN.
    error: why the query failed (unreachable, timeout, HTTP or query-language error, unexpected shape).
    sample_count: how many series (or scalars) the backend returned.
    """

    value: float | None = None
    error: str | None = None
    sample_count: int = 0

    def __post_init__(self) -> None:
        if self.error is not None and self.value is not None:
            raise ValueError("a failed query has no value")

    @property
    def is_error(self) -> bool:
        return self.error is not None

    @property
    def is_empty(self) -> bool:
        """The query succeeded but matched nothing."""
        return self.error is None and self.value is None

    @property
    def is_nan(self) -> bool:
        """The query succeeded with NaN, e.g. 0/0 when no requests arrived in the window."""
        return self.value is not None and math.isnan(self.value)


@dataclass(frozen=True)
class SideTotals:
    """One side's cumulative counters at the evaluation: requests served, and events (errors, ...)
    among them, summed over its pods. The sequential test counts what they grew by."""

    requests: QueryResult
    events: QueryResult


@dataclass(frozen=True)
class SideBuckets:
    """One side's histogram at the evaluation, summed over its pods: the requests observed (+Inf
    bucket) and, per boundary in seconds, those at or below it. A quantile comparison with confidence
    counts what they grew by."""

    total: QueryResult
    within: tuple[tuple[float, QueryResult], ...]


@dataclass(frozen=True)
class MetricQuery:
    query: str  # the query that ran, for status and rollbackReason
    result: QueryResult  # the candidate's value
    incumbent: QueryResult | None = None  # the same query for the incumbent, for metrics that compare
    totals: tuple[SideTotals, SideTotals] | None = None  # candidate, incumbent: for the sequential test
    buckets: tuple[SideBuckets, SideBuckets] | None = None  # candidate, incumbent: quantile bounds
    missing: tuple[MissingSeries, ...] = ()  # with no data: the series read that Prometheus has none of


@dataclass(frozen=True)
class Accelerators:
    """Each side's accelerators as the goodput and cost presets divide or multiply by them: the spec's
    count, or the sum of the side's Ready Pods' requests of `resource`."""

    resource: str
    candidate: float
    incumbent: float

    def missing(self) -> str | None:
        """Why a per-accelerator value means nothing (a side without accelerators), or None."""
        empty = [side for side in ("candidate", "incumbent") if getattr(self, side) <= 0]
        if not empty:
            return None
        return (
            f"no accelerators on the {' and the '.join(empty)} side: no Ready Pod requests {self.resource} "
            "(set spec.analysis.accelerators.resourceName, or the side's count)"
        )


@dataclass(frozen=True)
class AnalysisRun:
    """One evaluation of every metric, taken at `at`."""

    at: datetime
    request_count: QueryResult
    metrics: Mapping[str, MetricQuery]
    incumbent_request_count: QueryResult | None = None  # asked when a metric compares or tests
    window: timedelta | None = None  # the range the queries looked back over, where known
    accelerators: Accelerators | None = None  # read when a metric is per accelerator, or for the cost
    output_tokens: tuple[QueryResult, QueryResult] | None = None  # candidate, incumbent: for the cost

    @property
    def error_count(self) -> int:
        return sum(1 for measured in self.metrics.values() if measured.result.is_error)

    def incumbent_traffic(self) -> QueryResult:
        return self.incumbent_request_count or QueryResult(error="the incumbent's requests were not counted")

    @classmethod
    def failed(cls, queries: Mapping[str, str], at: datetime, error: str) -> AnalysisRun:
        """A run in which no query could be sent (e.g. the provider's credentials are unreadable)."""
        failed = QueryResult(error=error)
        return cls(at, failed, {name: MetricQuery(query, failed) for name, query in queries.items()})


# -- judgement -------------------------------------------------------------------------------------
# One metric's verdict in one evaluation, with what decided it.


@dataclass(frozen=True)
class Judgement:
    verdict: Verdict
    message: str
    broken: BreachRule | None = None  # with a Fail: the rule the value broke
    bound: float | None = None  # and its effective bound, where it has one
    bounds: ConfidenceBounds | None = None  # decided on counts: the interval and evidence
    quantile_bounds: QuantileBounds | None = None  # decided on histogram counts: each side's bounds


# -- cost ------------------------------------------------------------------------------------------
# status.cost from one analysis run: each side's cost per million output tokens over the window, accelerators
# x price per hour x window hours / (output tokens / 1e6). Pure arithmetic over what the run read; a side
# without tokens or accelerators has no cost, never a division by zero, nor one whose cost has no finite
# value.


SECONDS_PER_HOUR = 3600
TOKENS_PER_MILLION = 1e6


def cost_status(analysis: AnalysisSpec, run: AnalysisRun) -> CostStatus | None:
    """None unless both sides have a price and the run read their tokens and accelerators."""
    priced = analysis.accelerators
    if not analysis.priced or priced is None or run.output_tokens is None or run.accelerators is None:
        return None
    if run.window is None:
        return None
    seconds = run.window.total_seconds()
    candidate, incumbent = run.output_tokens
    return CostStatus(
        time=run.at,
        window_seconds=seconds,
        candidate=_side(priced.candidate, run.accelerators.candidate, candidate, seconds),
        incumbent=_side(priced.incumbent, run.accelerators.incumbent, incumbent, seconds),
    )


def _side(priced: SideAccelerators, accelerators: float, tokens: QueryResult, seconds: float) -> SideCost:
    assert priced.price_per_hour is not None
    grown = (
        tokens.value
        if tokens.value is not None and math.isfinite(tokens.value) and tokens.value > 0
        else None
    )
    cost = None
    if grown is not None and accelerators > 0:
        hours = seconds / SECONDS_PER_HOUR
        # Multiplied before dividing: a million tokens divided first underflows to 0 for a count as
        # small as 5e-324. What has no finite value (too few tokens for the price) is no cost.
        spent = accelerators * priced.price_per_hour * hours * TOKENS_PER_MILLION / grown
        cost = spent if math.isfinite(spent) else None
    return SideCost(
        accelerators=accelerators,
        price_per_hour=priced.price_per_hour,
        output_tokens=grown,
        cost_per_million_tokens=cost,
    )


# -- false_rollback --------------------------------------------------------------------------------
# Whether a rule is a coin toss at the traffic the analysis measured: the chance that it rolls back a
# candidate exactly as good as the incumbent (or as the candidate measures, where the incumbent is not
# measured) before the current step ends. Pure and cheap: exact binomial sums over the window's counts,
# bounded by a cut-off of the negligible tails; the sequential test's chance is its alpha, a bound that holds
# however often it looks (docs/statistics.md).
#
# One evaluation's window holds the candidate's `n` requests; a rule on a share of requests breaks with the
# chance that Binomial(n, p) / n breaks it (for a comparison, with the incumbent's count binomial too).
# Windows overlap when the interval is shorter than the window, so a step of length T has about T / window
# independent looks, at least one; the rule rolls back when its Fail verdicts in them go past failureLimit.
# `modelgate plan` simulates the same rules with the engine itself.


# Above this chance of a false rollback in a step, the operator warns (once per metric and step).
WARN_ABOVE = 0.2
# Counts further than this many standard deviations from the mean are left out of the sums.
TAIL_CUT = 12.0
# Requests in one window past which the chance is not estimated (as many as spec.analysis.minRequests
# may ask for): more is no real traffic, and the binomial's terms would not be enumerated.
MAX_COUNT = MAX_MIN_REQUESTS


@dataclass(frozen=True)
class CoinToss:
    """A rule likely to roll back a candidate as good as the incumbent in this step: what to warn of."""

    metric: str
    step: int
    chance: float
    base_rate: float  # the rate the chance is for
    candidate_requests: float  # in one window


def coin_tosses(
    analysis: AnalysisSpec,
    step: Step,
    step_index: int,
    run: AnalysisRun,
    records: tuple[MetricAnalysis, ...],
    window: timedelta,
) -> tuple[CoinToss, ...]:
    """The gating metrics whose chance of a false rollback in this step is above WARN_ABOVE."""
    latest = {record.name: record for record in records}
    looks = _looks(step, analysis.interval_timedelta, window)
    found = []
    for metric in analysis.metrics:
        record = latest.get(metric.name)
        if metric.dry_run or record is None:
            continue
        chance = step_chance(metric, analysis.min_requests, run, record, looks)
        if chance is not None and chance[0] > WARN_ABOVE:
            requests = run.request_count.value or 0.0
            found.append(CoinToss(metric.name, step_index, chance[0], chance[1], requests))
    return tuple(found)


def step_chance(
    metric: MetricSpec, min_requests: int, run: AnalysisRun, record: MetricAnalysis, looks: int
) -> tuple[float, float] | None:
    """(the chance of a false rollback over the step's `looks` windows, the base rate it is for);
    None when the rule is not on a share of requests, or the traffic or base rate is not known."""
    if metric.preset not in RATE_PRESETS:
        return None
    base = _incumbent_rate(record)
    if base is None and record.verdict is Verdict.FAIL:
        return None  # judged by the candidate's own rate, which breaks the rule: no false rollback
    base = record.value if base is None else base  # no incumbent measured: as good as the candidate measures
    candidate = _count(run.request_count.value)
    if base is None or candidate is None or not 0 <= base <= 1:
        return None
    incumbent = _count(run.incumbent_request_count.value) if run.incumbent_request_count else None
    once = evaluation_chance(metric, min_requests, base, candidate, incumbent)
    if once is None:
        return None
    chance = _more_than(metric.failure_limit - record.failures, looks, once)
    for alpha in _anytime_alphas(
        metric
    ):  # each counted rule's chance, over the whole rollout, is at most alpha
        chance = 1 - (1 - chance) * (1 - alpha)
    return chance, base


def _anytime_alphas(metric: MetricSpec) -> tuple[float, ...]:
    """The alphas of the metric's rules judged on counts with anytime-valid bounds."""
    compare = metric.compare.confidence if metric.compare is not None else None
    sequential = metric.sequential
    return tuple(rule.alpha for rule in (sequential, compare) if rule is not None)


def evaluation_chance(
    metric: MetricSpec, min_requests: int, base: float, candidate: int, incumbent: int | None
) -> float | None:
    """The chance one evaluation on windows of `candidate` (and `incumbent`) requests, both failing at
    `base`, gives Fail. Too few requests is Inconclusive: no chance at all."""
    if candidate < max(min_requests, 1):
        return 0.0
    window_compare = metric.compare is not None and metric.compare.confidence is None
    if not window_compare and metric.max is None and metric.min is None:
        return 0.0  # only anytime-valid rules: their chance is their alpha
    candidates = _pmf(candidate, base)
    shares = [count / candidate for count, _ in candidates]
    below = list(accumulate((weight for _, weight in candidates), initial=0.0))  # below[i]: of the first i
    if not window_compare:
        return _outside(metric, None, shares, below)
    if incumbent is None or incumbent < max(min_requests, 1):
        return None if incumbent is None else 0.0
    return sum(
        weight * _outside(metric, count / incumbent, shares, below) for count, weight in _pmf(incumbent, base)
    )


def _outside(metric: MetricSpec, incumbent: float | None, shares: list[float], below: list[float]) -> float:
    """The chance of a candidate share that gives Fail, by the rules of core.metric_verdicts.judge and
    compare: above max, below min, above maxRatio x or maxIncrease + the incumbent's `incumbent`, below
    minRatio x it.
    `shares` ascending, `below` their cumulative probabilities."""
    upper = [metric.max] if metric.max is not None else []
    lower = [metric.min] if metric.min is not None else []
    rule = metric.compare
    if rule is not None and incumbent is not None:
        if rule.max_ratio is not None:
            upper.append(rule.max_ratio * incumbent)
        if rule.max_increase is not None:
            upper.append(incumbent + rule.max_increase)
        if rule.min_ratio is not None:
            lower.append(rule.min_ratio * incumbent)
    low = bisect.bisect_left(shares, max(lower)) if lower else 0  # shares[:low] below every lower bound
    high = bisect.bisect_right(shares, min(upper)) if upper else len(shares)  # shares[high:] > upper
    return below[low] + below[-1] - below[max(high, low)]


def _pmf(n: int, p: float) -> list[tuple[int, float]]:
    """Binomial(n, p)'s probabilities, its far tails cut off."""
    if p <= 0 or p >= 1:
        return [(0 if p <= 0 else n, 1.0)]
    spread = TAIL_CUT * math.sqrt(n * p * (1 - p)) + 2
    low, high = max(0, math.floor(n * p - spread)), min(n, math.ceil(n * p + spread))
    log_n, log_p, log_q = math.lgamma(n + 1), math.log(p), math.log1p(-p)
    return [
        (k, math.exp(log_n - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_p + (n - k) * log_q))
        for k in range(low, high + 1)
    ]


def _more_than(allowed: int, looks: int, chance: float) -> float:
    """The chance that more than `allowed` of `looks` independent evaluations give Fail."""
    if allowed < 0:
        return 1.0
    return sum(weight for count, weight in _pmf(looks, chance) if count > allowed) if looks > allowed else 0.0


def _looks(step: Step, interval: timedelta, window: timedelta) -> int:
    """About how many independent windows the step is judged on: its pause (or mirror) over the
    window, at least one."""
    return max(1, math.floor((timed_length(step) or interval) / max(window, interval)))


def timed_length(step: Step) -> timedelta | None:
    """How long a timed pause or mirror step lasts at least; None for other steps."""
    if step.mirror is not None:
        return step.mirror.duration_timedelta
    return step.pause.duration_timedelta if step.pause is not None else None


def _incumbent_rate(record: MetricAnalysis) -> float | None:
    evidence = record.sequential
    if evidence is not None and evidence.incumbent_requests > 0:
        return evidence.incumbent_events / evidence.incumbent_requests
    return record.incumbent_value


def _count(value: float | None) -> int | None:
    """A window's requests; None beyond MAX_COUNT, whose binomial is not enumerated (issue 34: a
    count of 1e308 overflowed it)."""
    return None if value is None or not math.isfinite(value) or value > MAX_COUNT else int(value)


def new_warnings(
    spec: ModelRolloutSpec, status: ModelRolloutStatus, run: AnalysisRun, recorded: tuple[MetricAnalysis, ...]
) -> tuple[CoinToss, ...]:
    """The coin tosses of the current step not yet warned of, once the run is `recorded` (the
    metrics' analysis it leaves in status)."""
    index = status.current_step_index
    if spec.analysis is None or index >= len(spec.steps):
        return ()  # the watch window: no step to warn of
    window = run.window or spec.analysis.interval_timedelta
    warned = {(w.metric, w.step) for w in status.false_rollback_warnings}
    tosses = coin_tosses(spec.analysis, spec.steps[index], index, run, recorded, window)
    return tuple(t for t in tosses if (t.metric, t.step) not in warned)


def remember(warnings: tuple[FalseRollbackWarning, ...], toss: CoinToss) -> tuple[FalseRollbackWarning, ...]:
    record = FalseRollbackWarning(
        metric=toss.metric,
        step=toss.step,
        chance=round(toss.chance, 4),
        base_rate=toss.base_rate,
        candidate_requests=toss.candidate_requests,
    )
    return (*warnings, record)[-MAX_WARNINGS:]


def warning_message(toss: CoinToss) -> str:
    return (
        f"metric {toss.metric}: in step {toss.step}, at the traffic measured ({toss.candidate_requests:.0f} "
        f"candidate requests a window) and a {toss.base_rate:.3g} rate, a candidate as good as the incumbent "
        f"is rolled back with a chance of about {toss.chance:.0%}; raise minRequests, lengthen the "
        "window, or use a sequential test (`modelgate plan` shows the figures)"
    )


# -- generated -------------------------------------------------------------------------------------


class GeneratedChange(StrEnum):
    """What a one-edit rollout (spec.candidatePatch) does to the objects the operator generates."""

    CREATE = "create"  # the candidate's Deployment, Service and backendRef at weight 0, each if missing
    REMOVE = "remove"  # the backendRef, the Service and the Deployment deleted
    PATCH_INCUMBENT = "patch-incumbent"  # PromoteIntoIncumbent: the incumbent's Pod template takes the patch
    RELEASE = "release"  # RetireIncumbent: the candidate's owner reference goes; it outlives the rollout


@dataclass(frozen=True)
class GeneratedObjects:
    """What exists of a one-edit rollout's generated candidate, and the incumbent as the patch left it."""

    deployment: bool
    service: bool
    backend_refs: bool  # the candidate's backendRef, in every route rule
    owned: bool = True  # the Deployment still has the rollout as its owner
    incumbent_patched: bool = False  # the incumbent's Pod template carries the patch
    incumbent_rolled_out: bool = False  # ... and every replica of it is updated and available
    incumbent_scaled_down: bool = False

    @property
    def complete(self) -> bool:
        return self.deployment and self.service and self.backend_refs

    @property
    def leftover(self) -> bool:
        """Something generated that deleting the rollout would have to remove (none once released:
        the Service and backendRef then serve the candidate that outlives it)."""
        return self.owned and (self.deployment or self.service or self.backend_refs)
