"""A finished run's results against the policies and the baseline, pure. The gate's score judgement
(core/gate_judgement.py) with the baseline standing for the incumbent; what only a re-evaluation
asks: a test set older than maxTestSetAge, or undated while one is set, fails the run."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from modelgate.api import Verdict
from modelgate.api.duration import parse_duration
from modelgate.api.evaluation_spec import ModelEvaluationSpec
from modelgate.api.evaluation_status import (
    BaselineScore,
    BaselineStatus,
    CheckRecord,
    EvaluationRun,
    RunOutcome,
    RunReason,
    ScoreRecord,
)
from modelgate.api.gate import GateCheck
from modelgate.api.gate_result import GateResult
from modelgate.api.gate_status import TestSetVersion
from modelgate.api.object_url import SCHEME
from modelgate.core.gate_judgement import MESSAGE, CheckFailed, CheckMeasured, judge_score
from modelgate.core.reasons import clip

Finished = CheckMeasured | CheckFailed


@dataclass(frozen=True)
class _Finding:
    reason: RunReason
    message: str


def _age_limit(spec: ModelEvaluationSpec, check: GateCheck) -> str | None:
    return spec.max_test_set_age or check.policy.max_test_set_age


def _test_set_finding(limit: str | None, result: GateResult, check: str, now: datetime) -> _Finding | None:
    if limit is None:
        return None
    test_set = result.test_set
    if test_set is None:
        return _Finding(
            RunReason.TEST_SET_UNDATED, f"check {check}: the result names no test set, so its age is unknown"
        )
    age = now - test_set.date
    if age > parse_duration(limit):
        days = age / timedelta(days=1)
        return _Finding(
            RunReason.TEST_SET_STALE,
            f"check {check}: test set {test_set.name} version {test_set.version} is {days:.1f} days old, "
            f"older than maxTestSetAge {limit}",
        )
    return None


def _judged(
    check: GateCheck, result: GateResult, baseline: BaselineStatus | None
) -> list[tuple[ScoreRecord, str]]:
    """Each score held to the check's policy, the baseline standing for the incumbent; and why."""
    judged = []
    for score in result.scores:
        base = None if baseline is None else baseline.value(check.name, score.name)
        verdict = judge_score(score.model_copy(update={"incumbent": base}), check.policy)
        record = ScoreRecord(
            name=score.name,
            value=score.candidate,
            baseline=base,
            samples=score.samples,
            lower_is_better=score.lower_is_better,
            verdict=verdict.verdict,
        )
        judged.append((record, verdict.message.replace("incumbent", "baseline")))
    return judged


_SCORE_REASONS = {Verdict.FAIL: RunReason.BELOW_POLICY, Verdict.INCONCLUSIVE: RunReason.TOO_FEW_SAMPLES}


# The first reason found in this order decides the outcome: a run that could not measure, or on a
# test set it cannot trust, says nothing about regression.
PRECEDENCE = (
    RunReason.CHECK_ERROR,
    RunReason.TEST_SET_UNDATED,
    RunReason.TEST_SET_STALE,
    RunReason.BELOW_POLICY,
    RunReason.TOO_FEW_SAMPLES,
)


def judge_run(
    spec: ModelEvaluationSpec,
    run: EvaluationRun,
    seen: Mapping[str, Finished],
    baseline: BaselineStatus | None,
    now: datetime,
) -> EvaluationRun:
    """The run once every check has finished: its records, test set, outcome and reason."""
    records: list[CheckRecord] = []
    findings: list[_Finding] = []
    test_set = None
    checks = {check.name: check for check in spec.checks}
    for record in run.checks:
        observed = seen[record.name]
        check = checks.get(record.name)
        if isinstance(observed, CheckFailed) or check is None:
            error = observed.message if isinstance(observed, CheckFailed) else "removed from spec.checks"
            records.append(record.model_copy(update={"error": clip(error, MESSAGE)}))
            findings.append(_Finding(RunReason.CHECK_ERROR, f"check {record.name}: {error}"))
            continue
        result = observed.result
        if result.test_set is not None and test_set is None:
            named = result.test_set
            test_set = TestSetVersion(name=named.name, version=named.version, date=named.date)
        if finding := _test_set_finding(_age_limit(spec, check), result, check.name, now):
            findings.append(finding)
        judged = _judged(check, result, baseline)
        findings += [
            _Finding(_SCORE_REASONS[record.verdict], f"check {check.name}: {message}")
            for record, message in judged
            if record.verdict in _SCORE_REASONS
        ]
        scores = tuple(record for record, _ in judged)
        measured = {score.name for score in scores}
        findings += [
            _Finding(
                RunReason.CHECK_ERROR, f"check {check.name}: score {name} required by the policy is missing"
            )
            for name in check.policy.required_scores
            if name not in measured
        ]
        records.append(record.model_copy(update={"scores": scores}))
    outcome, reason, message = _outcome(findings)
    return run.model_copy(
        update={
            "checks": tuple(records),
            "test_set": test_set,
            "storage_key": storage_key(seen.values()),
            "outcome": outcome,
            "reason": reason,
            "message": clip(message, MESSAGE),
            "finished_at": now,
        }
    )


def _outcome(findings: list[_Finding]) -> tuple[RunOutcome, RunReason, str]:
    for reason in PRECEDENCE:
        decisive = [finding.message for finding in findings if finding.reason is reason]
        if decisive:
            outcome = RunOutcome.REGRESSED if reason is RunReason.BELOW_POLICY else RunOutcome.FAILED
            return outcome, reason, "; ".join(decisive)
    return RunOutcome.PASSED, RunReason.WITHIN_POLICY, "every score is within its policy against the baseline"


def storage_key(seen: Iterable[Finished]) -> str | None:
    """The deepest location that holds every results object the run's checks point at (the run's
    own, `<url>/<namespace>/<evaluation>/<run id>`, when several checks kept results), or None."""
    urls = [url for observed in seen if isinstance(observed, CheckMeasured) for url in observed.results_urls]
    if not urls:
        return None
    directories = [posixpath.dirname(url.removeprefix(SCHEME)) for url in urls]
    common = posixpath.commonpath(directories)  # by whole segments; "" for different buckets
    return f"{SCHEME}{common}" if common else None


def baseline_of(run: EvaluationRun) -> BaselineStatus:
    """A run's scores as a baseline (`baseline.run`)."""
    scores = tuple(
        BaselineScore(check=check.name, name=score.name, value=score.value)
        for check in run.checks
        for score in check.scores
    )
    return BaselineStatus(source=f"run/{run.id}", scores=scores)
