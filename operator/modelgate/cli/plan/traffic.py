"""Simulated traffic for `modelgate plan`, answered as Prometheus would answer the analysis.

Simulated traffic for `modelgate plan`: steady requests split between the sides by the route's
weight, each failing (an error, an abort, a refusal, a slow request) independently with its side's
rate; answered to the operator's analysis as Prometheus would answer its queries.

Each side's requests are numbered in the order they arrive; which of them fail is drawn once, by
geometric gaps between failures (exact for a Bernoulli sequence, and cheap at small rates;
tooling/sequential_sim.py draws its counts with it too). A window's value is then the failures
among the requests in it, and the totals the sequential test reads are the counts so far:
overlapping windows see the same failures, as they do in Prometheus."""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass, field
from datetime import datetime

from modelgate.api import RATE_PRESETS, MetricSpec, ModelRolloutSpec
from modelgate.core import AnalysisRun, LiveRoute, MetricQuery, QueryResult, SideTotals
from modelgate.metrics.promql_plan import analysis_plan
from modelgate.metrics.provider import AnalysisPlan


def failure_gap(rng: random.Random, rate: float) -> float:
    """Requests up to and including the next failure, for requests failing independently at `rate`
    (a geometric draw); infinite at a rate of 0."""
    if rate <= 0:
        return math.inf
    if rate >= 1:
        return 1.0
    return float(int(math.log(1.0 - rng.random()) / math.log1p(-rate)) + 1)


@dataclass
class SideTraffic:
    """One side's requests over time: their count (piecewise linear in time, its slope the side's
    requests per second) and which of them fail."""

    rng: random.Random
    rate: float  # the share of the side's requests that fail
    times: list[float] = field(default_factory=lambda: [0.0])  # seconds since the traffic began
    counts: list[float] = field(default_factory=lambda: [0.0])  # requests served by then
    failures: list[float] = field(default_factory=list)  # the numbers of the failing requests, ascending
    next_failure: float = 0.0

    def __post_init__(self) -> None:
        self.next_failure = failure_gap(self.rng, self.rate)

    def serve(self, until: float, per_second: float) -> None:
        """Serves `per_second` requests a second from the last moment served up to `until`."""
        self.counts.append(self.counts[-1] + per_second * max(until - self.times[-1], 0.0))
        self.times.append(until)
        while self.next_failure <= self.counts[-1]:
            self.failures.append(self.next_failure)
            self.next_failure += failure_gap(self.rng, self.rate)

    def served_by(self, moment: float) -> float:
        """Requests served by `moment` (at most the last moment served)."""
        index = bisect.bisect_right(self.times, moment) - 1
        if index < 0:
            return 0.0
        if index + 1 >= len(self.times):
            return self.counts[-1]
        start, end = self.times[index], self.times[index + 1]
        share = (moment - start) / (end - start) if end > start else 1.0
        return self.counts[index] + share * (self.counts[index + 1] - self.counts[index])

    def failed_among(self, first: float, last: float) -> int:
        """Failures among the requests numbered in (first, last]."""
        return bisect.bisect_right(self.failures, last) - bisect.bisect_right(self.failures, first)

    def window(self, moment: float, length: float) -> tuple[float, int]:
        """Requests served, and failures among them, in (moment - length, moment]."""
        before, now = self.served_by(moment - length), self.served_by(moment)
        return now - before, self.failed_among(before, now)

    def totals(self, moment: float) -> SideTotals:
        served = self.served_by(moment)
        return SideTotals(
            QueryResult(served, sample_count=1), QueryResult(float(self.failed_among(0, served)))
        )


def simulable(metric: MetricSpec) -> str | None:
    """Why the planner cannot simulate the metric, or None when it can: only shares of requests are
    counts it can draw."""
    if metric.query is not None:
        return "a custom query: what it measures is unknown to the planner"
    if metric.bounds_quantile:
        return (
            f"{metric.preset} with compare.confidence is judged on histogram buckets the engine's "
            "simulation does not draw: estimated as the latency form instead"
        )
    if metric.preset not in RATE_PRESETS:
        what = "a latency quantile" if metric.preset and metric.preset.endswith(("P50", "P99")) else "a level"
        return (
            f"{metric.preset} is {what}, not a share of requests: without a distribution the planner "
            "cannot draw it (slowRequestRate with a threshold counts slow requests and can be planned)"
        )
    return None


class SimulatedProvider:
    """Answers the analysis's runs from simulated traffic (MetricProvider's `run`), by metric rather
    than by query text: every metric of the plan is a share of requests (see `simulable`). The route
    the simulation writes is reported through `route_changed`."""

    def __init__(
        self, rng: random.Random, requests_per_second: float, rates: tuple[float, float], start: datetime
    ) -> None:
        self.per_second = requests_per_second
        self.start = start
        self.candidate = SideTraffic(rng, rates[0])
        self.incumbent = SideTraffic(rng, rates[1])
        self.candidate_share = 0.0
        self.served_until = 0.0

    def plan(self, spec: ModelRolloutSpec, namespace: str) -> AnalysisPlan:
        """The live provider's plan: the same metrics, the same window."""
        return analysis_plan(spec, namespace)

    def _seconds(self, moment: datetime) -> float:
        return (moment - self.start).total_seconds()

    def catch_up(self, moment: datetime) -> None:
        now = self._seconds(moment)
        if now > self.served_until:
            self.candidate.serve(now, self.per_second * self.candidate_share)
            self.incumbent.serve(now, self.per_second * (1 - self.candidate_share))
            self.served_until = now

    def route_changed(self, moment: datetime, route: LiveRoute) -> None:
        """Traffic up to `moment` went by the previous route; from it, by this one."""
        self.catch_up(moment)
        weight, mirror = route.candidate_weight / 100, route.mirror_percent / 100
        self.candidate_share = weight + (1 - weight) * mirror

    def run(self, plan: AnalysisPlan, at: datetime) -> AnalysisRun:
        self.catch_up(at)
        now, length = self._seconds(at), plan.window.total_seconds()
        c_requests, c_failures = self.candidate.window(now, length)
        i_requests, i_failures = self.incumbent.window(now, length)
        candidate, incumbent = _share(c_failures, c_requests), _share(i_failures, i_requests)
        totals = (self.candidate.totals(now), self.incumbent.totals(now))
        metrics = {
            name: MetricQuery(
                "(simulated)",
                candidate,
                incumbent=incumbent if metric.incumbent is not None else None,
                totals=totals if metric.totals is not None else None,
            )
            for name, metric in plan.metrics.items()
        }
        incumbent_count = QueryResult(i_requests, sample_count=1)
        return AnalysisRun(
            at,
            QueryResult(c_requests, sample_count=1),
            metrics,
            incumbent_request_count=incumbent_count if plan.incumbent_request_count is not None else None,
            window=plan.window,
        )


def _share(failures: int, requests: float) -> QueryResult:
    # As PromQL's division: 0/0 is NaN, which the analysis takes as no data.
    return QueryResult(failures / requests if requests > 0 else math.nan, sample_count=1)
