"""The verdict rules of core/metric_verdicts.py as data, for the docs: which verdict, and what it does.

In which situation a metric gets which verdict, and what each verdict does to the rollout.
docs/metric-presets.md's verdict tables are rendered from these (tooling/verdicts_doc.py), and
tests/unit/test_verdict_rules.py runs every row's situation through `analysis.evaluate`, so neither
the page nor this table can drift from the code. They live in tooling/, not in the runtime: each
row's `when` is prose for the docs, which the code would have to turn into a predicate to run.

A new rule is one more VerdictRule, at its place in the order (the first row that applies gives the
verdict), and one more situation in the test, which fails until it has one."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from modelgate.api import MetricSpec, Verdict
from modelgate.api.progress_deadlines import DEFAULT_INCONCLUSIVE_DEADLINE
from modelgate.api.rollback_policy import RollbackSpec
from modelgate.api.specmodel import SpecModel


class Metrics(StrEnum):
    """Which metrics a rule concerns."""

    EVERY = "every metric"
    AGAINST_INCUMBENT = "`compare` or `sequential`"
    COMPARE = "`compare` without `confidence`"
    SEQUENTIAL = "`sequential`"
    COUNTED = "`sequential`, `compare.confidence`"
    MARGIN = "`sequential` with `margin` or `marginIncrease`, `compare.confidence`"
    NO_MARGIN = "`sequential` without a margin"


class MinRequests(StrEnum):
    """How a rule stands to `minRequests`."""

    APPLIES = "yes"  # given only with enough requests; with fewer, the metric is Inconclusive
    IGNORED = "no"  # given however few requests the window holds
    IS_THE_CHECK = "this is the check"  # the rule is the request count itself


@dataclass(frozen=True)
class VerdictRule:
    situation: str  # a key the test builds the situation by
    when: str
    metrics: Metrics
    verdict: Verdict
    min_requests: MinRequests


# In the order analysis.evaluate applies them: the first that applies gives the verdict.
VERDICT_RULES: tuple[VerdictRule, ...] = (
    VerdictRule(
        "counted-evidence",
        "the counts since the rollout began show harm (anytime-valid: however few requests this window "
        "holds): the sequential test's interval lies above `tolerance`; with `compare.confidence`, the "
        "rate ratio's lower bound is above `maxRatio` or the difference's above `maxIncrease`; on a latency "
        "preset, the candidate's quantile's lower bound is at least `maxRatio` x the incumbent's upper bound",
        Metrics.COUNTED,
        Verdict.FAIL,
        MinRequests.IGNORED,
    ),
    VerdictRule(
        "query-failed",
        "the query failed: Prometheus unreachable, timeout, an HTTP or PromQL error, more than one "
        "series, a range vector",
        Metrics.EVERY,
        Verdict.ERROR,
        MinRequests.IGNORED,
    ),
    VerdictRule(
        "candidate-count-failed",
        "counting the candidate's requests failed",
        Metrics.EVERY,
        Verdict.ERROR,
        MinRequests.IS_THE_CHECK,
    ),
    VerdictRule(
        "too-few-candidate-requests",
        "fewer than `minRequests` candidate requests in the window, or none",
        Metrics.EVERY,
        Verdict.INCONCLUSIVE,
        MinRequests.IS_THE_CHECK,
    ),
    VerdictRule(
        "incumbent-count-failed",
        "counting the incumbent's requests failed",
        Metrics.AGAINST_INCUMBENT,
        Verdict.ERROR,
        MinRequests.IS_THE_CHECK,
    ),
    VerdictRule(
        "too-few-incumbent-requests",
        "fewer than `minRequests` incumbent requests in the window, or none",
        Metrics.AGAINST_INCUMBENT,
        Verdict.INCONCLUSIVE,
        MinRequests.IS_THE_CHECK,
    ),
    VerdictRule(
        "no-data",
        "the query returned no data, or NaN",
        Metrics.EVERY,
        Verdict.INCONCLUSIVE,
        MinRequests.APPLIES,
    ),
    VerdictRule(
        "out-of-bounds",
        "the value is above `max` or below `min`",
        Metrics.EVERY,
        Verdict.FAIL,
        MinRequests.APPLIES,
    ),
    VerdictRule(
        "margin-not-shown",
        "no counts read yet (with a margin, the first reading is only a baseline), or the interval "
        "does not yet lie below `sequential.margin` (or the rates' difference below `marginIncrease`; on "
        "a latency preset, the candidate's quantile's upper bound is not yet at most "
        "`compare.confidence.margin` x the incumbent's lower bound): the step waits for evidence of no harm",
        Metrics.MARGIN,
        Verdict.INCONCLUSIVE,
        MinRequests.APPLIES,
    ),
    VerdictRule(
        "incumbent-query-failed",
        "the incumbent's query failed",
        Metrics.COMPARE,
        Verdict.ERROR,
        MinRequests.APPLIES,
    ),
    VerdictRule(
        "incumbent-no-data",
        "the incumbent's query returned no data, or NaN",
        Metrics.COMPARE,
        Verdict.INCONCLUSIVE,
        MinRequests.APPLIES,
    ),
    VerdictRule(
        "worse-than-incumbent",
        "the value is above `maxRatio` x the incumbent's, or above the incumbent's + `maxIncrease`, or "
        "below `minRatio` x the incumbent's",
        Metrics.COMPARE,
        Verdict.FAIL,
        MinRequests.APPLIES,
    ),
    VerdictRule(
        "sequential-without-evidence",
        "the sequential test's evidence is still below 1/alpha, and the value is within `min`/`max` (or "
        "the metric has neither): no evidence of harm, not evidence of none; a step can complete before "
        "the test could catch a regression (set `margin` or `marginIncrease` to pass only on evidence)",
        Metrics.NO_MARGIN,
        Verdict.PASS,
        MinRequests.APPLIES,
    ),
    VerdictRule(
        "within-bounds",
        "none of the above: the value is within `min`/`max` (and the comparison's bounds); with "
        "`sequential.margin`, the interval lies below the margin; with `marginIncrease`, the rates' "
        "difference lies below it",
        Metrics.EVERY,
        Verdict.PASS,
        MinRequests.APPLIES,
    ),
)


@dataclass(frozen=True)
class VerdictEffect:
    verdict: Verdict
    counts_as_failure: bool  # adds one to the metric's `failures`
    effect: str


def _default(model: type[SpecModel], field: str) -> object:
    return model.model_fields[field].default


def verdict_effects() -> tuple[VerdictEffect, ...]:
    """What each verdict does, with the defaults the API models have."""
    failure_limit = _default(MetricSpec, "failure_limit")
    scope = _default(MetricSpec, "failure_limit_scope")
    errors = _default(RollbackSpec, "max_consecutive_errors")
    on_error = _default(RollbackSpec, "on_prometheus_error")
    default = DEFAULT_INCONCLUSIVE_DEADLINE
    waits = (
        "`spec.progressDeadlines.inconclusive` bounds the wait (`after`, then `pause`, `rollback` or "
        "`fail`; `wait` turns it off), counted from the step's first Inconclusive verdict; unset, a step "
        f"does `{default.action}` after {default.after} (the watch window has no default)"
    )
    return (
        VerdictEffect(
            Verdict.PASS,
            False,
            "A step completes once every gating metric's latest verdict is Pass, from an evaluation taken "
            "at least one `interval` after the step started (and, for a timed pause, once its time is up).",
        ),
        VerdictEffect(
            Verdict.FAIL,
            True,
            f"The metric's `failures` goes up by one; when it exceeds `failureLimit` (default "
            f"{failure_limit}) the rollout rolls back in the same reconcile, also during a pause. "
            f"`failureLimitScope` (default `{scope}`) counts Fails over the whole rollout (`rollout`) or "
            "afresh in each step (`step`), not Fails in a row.",
        ),
        VerdictEffect(
            Verdict.INCONCLUSIVE,
            False,
            f"No verdict: the step waits; not a failure and not an error. {waits}. `modelgate promote` "
            "finishes the step by hand, `modelgate abort` rolls back.",
        ),
        VerdictEffect(
            Verdict.ERROR,
            False,
            "The step waits. Evaluations with at least one Error in a row are counted in "
            f"`status.consecutivePrometheusErrors`; at `rollback.maxConsecutiveErrors` (default {errors}) "
            f"the rollout pauses or rolls back, as `rollback.onPrometheusError` says (default "
            f"`{on_error}`). One evaluation without an Error resets the count.",
        ),
    )
