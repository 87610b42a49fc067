"""The verdict rules as data (tooling/verdict_rules.py), from which docs/metric-presets.md's verdict tables
are rendered, are what core/metric_verdicts.py does: every row's situation, played through `evaluate`, gives
the row's verdict; the row's `minRequests` column holds (with too few requests the verdict becomes
Inconclusive, or stays); and only a Fail counts toward failureLimit."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from modelgate.api import MetricAnalysis, MetricSpec, Verdict
from modelgate.core import AnalysisRun, MetricQuery, QueryResult, SideTotals
from modelgate.core.metric_verdicts import evaluate
from tests.unit.engine_support import analysis_spec
from tooling.verdict_rules import VERDICT_RULES, MinRequests, VerdictRule, verdict_effects

MIN_REQUESTS = 50
PLENTY = QueryResult(value=1000.0, sample_count=1)
TOO_FEW = QueryResult(value=MIN_REQUESTS / 2, sample_count=1)
AT = datetime(2026, 12, 1, tzinfo=UTC)

BOUNDED = MetricSpec.model_validate({"name": "errors", "preset": "errorRate", "max": 0.05, "min": 0.001})
COMPARED = MetricSpec.model_validate(
    {"name": "ttft", "preset": "ttftP99", "compare": {"maxRatio": 1.5, "maxIncrease": 0.2}}
)
TESTED = MetricSpec.model_validate(
    {"name": "errors", "preset": "errorRate", "max": 0.5, "sequential": {"alpha": 0.05}}
)

MARGIN = MetricSpec.model_validate(
    {"name": "errors", "preset": "errorRate", "sequential": {"alpha": 0.05, "margin": 1.5}}
)
CONFIDENT = MetricSpec.model_validate(
    {"name": "errors", "preset": "errorRate", "compare": {"maxRatio": 1.5, "confidence": {"alpha": 0.05}}}
)


def value(v: float | None) -> QueryResult:
    return QueryResult(value=v, sample_count=0 if v is None else 1)


def failed(why: str = "connection refused") -> QueryResult:
    return QueryResult(error=why)


def counts(
    c_events: float, c_requests: float, i_events: float, i_requests: float
) -> tuple[SideTotals, SideTotals]:
    return (
        SideTotals(value(c_requests), value(c_events)),
        SideTotals(value(i_requests), value(i_events)),
    )


@dataclass(frozen=True)
class Situation:
    """One metric, one evaluation of it, and what earlier evaluations left in status."""

    metric: MetricSpec
    measured: MetricQuery
    candidate_count: QueryResult = PLENTY
    incumbent_count: QueryResult = PLENTY
    previous: tuple[MetricAnalysis, ...] = ()

    def evaluated(self) -> MetricAnalysis:
        run = AnalysisRun(AT, self.candidate_count, {self.metric.name: self.measured}, self.incumbent_count)
        spec = analysis_spec([self.metric], min_requests=MIN_REQUESTS)
        (record,) = evaluate(spec, run, self.previous).metrics
        return record

    def with_few_requests(self) -> Situation:
        return dataclasses.replace(self, candidate_count=TOO_FEW, incumbent_count=TOO_FEW)


def measured(result: QueryResult, incumbent: QueryResult | None = None, **more: object) -> MetricQuery:
    return MetricQuery("the query", result, incumbent, **more)  # type: ignore[arg-type]


def judged_sequentially(
    totals: tuple[SideTotals, SideTotals],
    previous: tuple[MetricAnalysis, ...] = (),
    metric: MetricSpec = TESTED,
) -> Situation:
    """A metric judged on counts (a sequential test by default) reading `totals`."""
    return Situation(metric, measured(value(0.01), value(0.01), totals=totals), previous=previous)


def evidence_after(
    totals: tuple[SideTotals, SideTotals], metric: MetricSpec = TESTED
) -> tuple[MetricAnalysis, ...]:
    """Status after one evaluation that read `totals` (the counted rule's baseline)."""
    return (judged_sequentially(totals, metric=metric).evaluated(),)


BASELINE = counts(0, 0, 0, 0)

# Each row's situation(s); every one must give the row's verdict.
SITUATIONS: dict[str, Callable[[], list[Situation]]] = {
    # 300 of the candidate's 1000 requests failed against 10 of the incumbent's 1000: one interval is
    # enough evidence.
    "counted-evidence": lambda: [
        judged_sequentially(counts(300, 1000, 10, 1000), evidence_after(BASELINE)),
        judged_sequentially(counts(300, 1000, 10, 1000), evidence_after(BASELINE, CONFIDENT), CONFIDENT),
    ],
    "query-failed": lambda: [
        Situation(BOUNDED, measured(failed())),
        Situation(COMPARED, measured(failed(), value(0.2))),
    ],
    "candidate-count-failed": lambda: [Situation(BOUNDED, measured(value(0.01)), candidate_count=failed())],
    "too-few-candidate-requests": lambda: [
        Situation(BOUNDED, measured(value(0.01)), candidate_count=TOO_FEW),
        Situation(BOUNDED, measured(value(0.01)), candidate_count=value(None)),
    ],
    "incumbent-count-failed": lambda: [
        Situation(COMPARED, measured(value(0.2), value(0.2)), incumbent_count=failed()),
        dataclasses.replace(judged_sequentially(counts(1, 1000, 1, 1000)), incumbent_count=failed()),
    ],
    "too-few-incumbent-requests": lambda: [
        Situation(COMPARED, measured(value(0.2), value(0.2)), incumbent_count=TOO_FEW),
        dataclasses.replace(judged_sequentially(counts(1, 1000, 1, 1000)), incumbent_count=value(None)),
    ],
    "no-data": lambda: [
        Situation(BOUNDED, measured(value(None))),
        Situation(BOUNDED, measured(value(math.nan))),
        Situation(COMPARED, measured(value(None), value(0.2))),
    ],
    "out-of-bounds": lambda: [
        Situation(BOUNDED, measured(value(0.06))),
        Situation(BOUNDED, measured(value(0.0))),
    ],
    # With a margin, 12 of 1000 against 10 of 1000 shows nothing yet; a first reading is a baseline.
    "margin-not-shown": lambda: [
        judged_sequentially(counts(12, 1000, 10, 1000), evidence_after(BASELINE, MARGIN), MARGIN),
        judged_sequentially(BASELINE, metric=MARGIN),
        Situation(CONFIDENT, measured(value(0.01), value(0.01))),  # the totals were never read
    ],
    "incumbent-query-failed": lambda: [Situation(COMPARED, measured(value(0.2), failed()))],
    "incumbent-no-data": lambda: [
        Situation(COMPARED, measured(value(0.2), value(None))),
        Situation(COMPARED, measured(value(0.2), value(math.nan))),
    ],
    "worse-than-incumbent": lambda: [
        Situation(COMPARED, measured(value(0.31), value(0.2))),  # above 1.5 x 0.2
        Situation(COMPARED, measured(value(1.25), value(1.0))),  # above 1.0 + 0.2, within 1.5 x
    ],
    # 12 of the candidate's 1000 failed against 10 of 1000: no evidence of a regression yet.
    "sequential-without-evidence": lambda: [
        judged_sequentially(counts(12, 1000, 10, 1000), evidence_after(BASELINE))
    ],
    "within-bounds": lambda: [
        Situation(BOUNDED, measured(value(0.01))),
        # 10,000 of 100,000 against 10,000 of 100,000: the ratio is shown below 1.5.
        judged_sequentially(
            counts(10_000, 100_000, 10_000, 100_000), evidence_after(BASELINE, MARGIN), MARGIN
        ),
        judged_sequentially(counts(12, 1000, 10, 1000), evidence_after(BASELINE, CONFIDENT), CONFIDENT),
        Situation(COMPARED, measured(value(0.25), value(0.2))),
    ],
}


def by_row(rule: VerdictRule) -> list[Situation]:
    assert rule.situation in SITUATIONS, f"add the situation {rule.situation!r} to SITUATIONS"
    return SITUATIONS[rule.situation]()


ROWS = pytest.mark.parametrize("rule", VERDICT_RULES, ids=[rule.situation for rule in VERDICT_RULES])


def test_every_situation_is_a_row_of_the_table() -> None:
    assert set(SITUATIONS) == {rule.situation for rule in VERDICT_RULES}


@ROWS
def test_each_rows_situation_gets_its_verdict_from_the_operators_code(rule: VerdictRule) -> None:
    for situation in by_row(rule):
        record = situation.evaluated()
        assert record.verdict is rule.verdict, f"{rule.when}: {record.message}"


# The rows that are not the request count itself.
JUDGED = [rule for rule in VERDICT_RULES if rule.min_requests is not MinRequests.IS_THE_CHECK]


@pytest.mark.parametrize("rule", JUDGED, ids=[rule.situation for rule in JUDGED])
def test_each_rows_minrequests_column_is_what_the_code_does(rule: VerdictRule) -> None:
    expected = Verdict.INCONCLUSIVE if rule.min_requests is MinRequests.APPLIES else rule.verdict
    for situation in by_row(rule):
        record = situation.with_few_requests().evaluated()
        assert record.verdict is expected, f"{rule.when}, with too few requests: {record.message}"


# Two rows' situations at once, each pair named by its rows: the earlier row gives the verdict.
BOTH = MetricSpec.model_validate(
    {"name": "ttft", "preset": "ttftP99", "max": 1.0, "compare": {"maxRatio": 1.5}}
)
COMBINED: dict[tuple[str, str], Situation] = {
    ("counted-evidence", "query-failed"): dataclasses.replace(
        judged_sequentially(counts(300, 1000, 10, 1000), evidence_after(BASELINE)),
        measured=measured(failed(), value(0.01), totals=counts(300, 1000, 10, 1000)),
    ),
    ("query-failed", "too-few-candidate-requests"): Situation(
        BOUNDED, measured(failed()), candidate_count=TOO_FEW
    ),
    ("too-few-candidate-requests", "out-of-bounds"): Situation(
        BOUNDED, measured(value(0.06)), candidate_count=TOO_FEW
    ),
    ("too-few-incumbent-requests", "out-of-bounds"): Situation(
        BOTH, measured(value(2.0), value(0.5)), incumbent_count=TOO_FEW
    ),
    ("no-data", "incumbent-query-failed"): Situation(BOTH, measured(value(None), failed())),
    ("out-of-bounds", "incumbent-query-failed"): Situation(BOTH, measured(value(2.0), failed())),
    ("incumbent-query-failed", "worse-than-incumbent"): Situation(COMPARED, measured(value(0.9), failed())),
}


@pytest.mark.parametrize(("earlier", "later"), COMBINED, ids=[f"{a}-over-{b}" for a, b in COMBINED])
def test_the_rows_are_in_the_order_the_code_applies_them(earlier: str, later: str) -> None:
    order = [rule.situation for rule in VERDICT_RULES]
    assert order.index(earlier) < order.index(later)
    rule = VERDICT_RULES[order.index(earlier)]
    assert COMBINED[earlier, later].evaluated().verdict is rule.verdict, rule.when


def test_only_a_fail_counts_toward_the_failure_limit() -> None:
    counted = {effect.verdict: effect.counts_as_failure for effect in verdict_effects()}
    assert set(counted) == set(Verdict)
    for rule in VERDICT_RULES:
        for situation in by_row(rule):
            record = situation.evaluated()
            before = sum(m.failures for m in situation.previous)
            assert record.failures - before == counted[record.verdict], rule.when


def test_a_sequential_fail_comes_on_the_evidence_so_far_whatever_the_window() -> None:
    """Row 1 needs no window: the evidence of earlier intervals rejects with this one's counts missing."""
    rejected = judged_sequentially(counts(300, 1000, 10, 1000), evidence_after(BASELINE)).evaluated()
    later = dataclasses.replace(
        judged_sequentially(counts(300, 1000, 10, 1000), (rejected,)), candidate_count=value(None)
    ).evaluated()
    assert later.verdict is Verdict.FAIL
