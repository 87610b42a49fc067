"""`modelgate evaluations`: the score trend per check fits 80 columns, newest run last, with the
baseline and a mark on a score below its policy; and the regressed series behind the alert, one per
check of the newest judged run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from modelgate import observability
from modelgate.api.evaluation_status import (
    BaselineScore,
    BaselineStatus,
    CheckRecord,
    EvaluationRun,
    ModelEvaluationStatus,
    RunOutcome,
    ScoreRecord,
)
from modelgate.api.statusmodel import Verdict
from modelgate.cli.render.evaluation_trend import WIDTH, render_trend

START = datetime(2026, 12, 5, 6, 0, tzinfo=UTC)


def run(minute: int, math: float, verdict: Verdict) -> EvaluationRun:
    score = ScoreRecord(name="math", value=math, baseline=0.8, samples=25, verdict=verdict)
    started = START + timedelta(minutes=minute)
    outcome = RunOutcome.REGRESSED if verdict is Verdict.FAIL else RunOutcome.PASSED
    return EvaluationRun(
        id=started.strftime("%Y%m%dT%H%M%S"),
        started_at=started,
        outcome=outcome,
        checks=(CheckRecord(name="a-check-with-a-rather-long-name", job="j", scores=(score,)),),
    )


def test_the_trend_fits_80_columns_newest_last_and_marks_a_regression() -> None:
    runs = [run(minute, 0.8, Verdict.PASS) for minute in range(12)] + [run(12, 0.6, Verdict.FAIL)]
    baseline = BaselineStatus(
        source="run/x",
        scores=(BaselineScore(check="a-check-with-a-rather-long-name", name="math", value=0.8),),
    )
    status = ModelEvaluationStatus(runs=tuple(reversed(runs)), baseline=baseline)
    lines = render_trend("serving", "chat-quality", "* * * * *", status)
    assert max(len(line) for line in lines) <= WIDTH
    started, outcome, scores = lines[1], lines[2], lines[3]
    assert started.split()[-1] == "06:12" and outcome.split()[-1] == "REGR"
    assert scores.split()[-1] == "0.600*" and "0.800" in scores.split()[-2]
    assert "last Regressed" in lines[0]


def test_no_runs_yet_says_so() -> None:
    lines = render_trend("serving", "chat-quality", "@hourly", ModelEvaluationStatus())
    assert lines[-1].strip() == "no runs yet"


def test_the_regressed_series_follow_the_newest_judged_runs_checks() -> None:
    def series() -> dict[str, float]:
        samples = [s for m in observability.EVALUATION_REGRESSED.collect() for s in m.samples]
        return {s.labels["check"]: s.value for s in samples if s.labels["evaluation"] == "trend-test"}

    observability.export_regressed("ns", "trend-test", (("quality", True), ("safety", False)))
    assert series() == {"quality": 1.0, "safety": 0.0}
    observability.export_regressed("ns", "trend-test", (("quality", False),))
    assert series() == {"quality": 0.0}, "a check no longer in the run has no series"
    observability.forget_evaluation("ns", "trend-test")
    assert series() == {}
