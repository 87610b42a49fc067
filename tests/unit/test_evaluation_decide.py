"""The ModelEvaluation's pure decision: when a run is due (the schedule, run-now, suspended), what a
finished run means against the baseline (passed, regressed, failed on a stale or undated test set),
and the history bound."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from modelgate.api.errors import InvalidSpecError
from modelgate.api.evaluation_spec import ModelEvaluationSpec, parse_evaluation_spec
from modelgate.api.evaluation_status import (
    BaselineScore,
    BaselineStatus,
    ModelEvaluationStatus,
    RunOutcome,
    RunReason,
)
from modelgate.api.gate_result import GateResult, Score, TestSetIdentity
from modelgate.core.gate_judgement import CheckFailed, CheckMeasured, CheckObservation, CheckRunning
from modelgate.core.stepping import GATE_POLL
from modelgate.modelevaluation.engine import (
    DeleteJobs,
    EvaluationDecision,
    EvaluationObservations,
    ExportRegressed,
    PostEvent,
    StartRun,
    decide,
)
from modelgate.modelevaluation.engine.decision import EvaluationReason

CREATED = datetime(2026, 12, 1, 10, 0, 30, tzinfo=UTC)
POLICY = {"minSamples": 20, "maxDrop": 0.05}


def spec(**fields: Any) -> ModelEvaluationSpec:
    check = {"name": "quality", "job": {"image": "checks/quality:1"}, "policy": POLICY}
    body = {"model": {"deployment": "chat"}, "checks": [check], "schedule": "*/5 * * * *", **fields}
    return parse_evaluation_spec(body)


def tick(
    the_spec: ModelEvaluationSpec,
    status: ModelEvaluationStatus,
    now: datetime,
    checks: dict[str, CheckObservation] | None = None,
    run_now: str | None = None,
    promoted: BaselineStatus | str | None = None,
) -> EvaluationDecision:
    seen = EvaluationObservations(
        generation=1, created_at=CREATED, run_now=run_now, checks=checks or {}, promoted=promoted
    )
    return decide(the_spec, status, seen, now, name="chat-eval", uid="uid-1")


def measured(math: float, *, samples: int = 50, dated: datetime = CREATED) -> CheckMeasured:
    test_set = TestSetIdentity(name="qa", version="v7", date=dated)
    score = Score(name="math", candidate=math, incumbent=math, samples=samples)
    return CheckMeasured(GateResult(test_set=test_set, scores=(score,)))


def started(the_spec: ModelEvaluationSpec, at: datetime) -> ModelEvaluationStatus:
    decision = tick(the_spec, ModelEvaluationStatus(), at, run_now="first")
    assert decision.status.runs[0].outcome is RunOutcome.RUNNING
    return decision.status


def finished(the_spec: ModelEvaluationSpec, seen: CheckObservation, **kwargs: Any) -> EvaluationDecision:
    at = CREATED + timedelta(minutes=1)
    return tick(
        the_spec,
        started(the_spec, at),
        at + timedelta(seconds=30),
        {"quality": seen},
        run_now="first",
        **kwargs,
    )


def kinds(decision: EvaluationDecision, kind: type) -> list[Any]:
    return [action for action in decision.actions if isinstance(action, kind)]


def test_a_run_starts_when_the_schedule_fires_and_not_before() -> None:
    before = tick(spec(), ModelEvaluationStatus(), CREATED + timedelta(minutes=4))
    assert before.status.runs == () and not kinds(before, StartRun)
    assert before.wake_at == datetime(2026, 12, 1, 10, 5, tzinfo=UTC)
    due = tick(spec(), ModelEvaluationStatus(), CREATED + timedelta(minutes=5))
    (run,) = due.status.runs
    assert (run.outcome, run.on_demand) == (RunOutcome.RUNNING, False)
    (start,) = kinds(due, StartRun)
    assert start.run_id == run.id and [check for check, _ in start.jobs] == ["quality"]
    assert due.wake_at == CREATED + timedelta(minutes=5, seconds=1), "a new run is looked at again soon"
    again = tick(spec(), due.status, CREATED + timedelta(minutes=5, seconds=10))
    assert len(again.status.runs) == 1, "the same fire starts no second run"


def test_run_now_starts_a_run_once_per_annotation_value() -> None:
    at = CREATED + timedelta(minutes=1)
    first = tick(spec(), ModelEvaluationStatus(), at, run_now="a")
    assert first.status.runs[0].on_demand and first.status.last_run_now == "a"
    done = tick(spec(), first.status, at + timedelta(seconds=5), {"quality": measured(0.8)}, run_now="a")
    assert len(done.status.runs) == 1 and done.status.runs[0].outcome is RunOutcome.PASSED
    second = tick(spec(), done.status, at + timedelta(seconds=6), run_now="b")
    assert len(second.status.runs) == 2


def test_a_run_now_value_longer_than_the_status_field_starts_one_run() -> None:
    at = CREATED + timedelta(minutes=1)
    long_value = "x" * 5000
    first = tick(spec(), ModelEvaluationStatus(), at, run_now=long_value)
    assert len(first.status.runs) == 1 and first.status.last_run_now is not None
    done = tick(
        spec(), first.status, at + timedelta(seconds=5), {"quality": measured(0.8)}, run_now=long_value
    )
    again = tick(spec(), done.status, at + timedelta(seconds=6), run_now=long_value)
    assert len(again.status.runs) == 1
    other = tick(spec(), again.status, at + timedelta(seconds=7), run_now=long_value + "y")
    assert len(other.status.runs) == 2


def test_a_due_run_waits_for_the_running_one() -> None:
    at = CREATED + timedelta(minutes=1)
    running = started(spec(), at)
    later = tick(
        spec(), running, at + timedelta(minutes=10), {"quality": CheckRunning("running")}, run_now="second"
    )
    assert len(later.status.runs) == 1 and later.status.last_run_now == "first"
    assert kinds(later, StartRun), "the running run's missing Jobs are made again"


def test_a_running_run_is_looked_at_as_often_as_a_rollouts_gate() -> None:
    """A check Pod that cannot start (a missing Secret) changes no Job, so no watch event wakes the
    run: it fails as soon after as a rollout's gate would (seen within 10 s before)."""
    at = CREATED + timedelta(minutes=1)
    later = at + timedelta(seconds=3)
    waiting = tick(spec(), started(spec(), at), later, {"quality": CheckRunning("waiting for its Pod")})
    assert waiting.wake_at == later + GATE_POLL


def test_suspended_skips_scheduled_fires_but_runs_on_demand() -> None:
    suspended = spec(suspend=True)
    skipped = tick(suspended, ModelEvaluationStatus(), CREATED + timedelta(minutes=5))
    assert skipped.status.runs == () and skipped.wake_at is None
    assert skipped.status.last_schedule_time == CREATED + timedelta(minutes=5)
    resumed = tick(spec(), skipped.status, CREATED + timedelta(minutes=6))
    assert resumed.status.runs == (), "a fire skipped while suspended is not made up"
    on_demand = tick(suspended, skipped.status, CREATED + timedelta(minutes=6), run_now="x")
    assert len(on_demand.status.runs) == 1


def test_a_run_within_the_policy_against_the_baseline_passes() -> None:
    baseline = BaselineStatus(
        source="rollout/chat", scores=(BaselineScore(check="quality", name="math", value=0.82),)
    )
    decision = finished(spec(baseline={"promoted": {"rollout": "chat"}}), measured(0.8), promoted=baseline)
    run = decision.status.runs[0]
    assert (run.outcome, run.reason) == (RunOutcome.PASSED, RunReason.WITHIN_POLICY)
    assert run.checks[0].scores[0].baseline == 0.82 and run.test_set is not None
    assert kinds(decision, ExportRegressed) == [ExportRegressed((("quality", False),))]
    assert kinds(decision, DeleteJobs)[0].names == (run.checks[0].job,)


def test_a_drop_past_max_drop_against_the_baseline_regresses() -> None:
    baseline = BaselineStatus(
        source="rollout/chat", scores=(BaselineScore(check="quality", name="math", value=0.82),)
    )
    decision = finished(spec(baseline={"promoted": {"rollout": "chat"}}), measured(0.6), promoted=baseline)
    run = decision.status.runs[0]
    assert (run.outcome, run.reason) == (RunOutcome.REGRESSED, RunReason.BELOW_POLICY)
    assert "math" in (run.message or "")
    regressed = next(c for c in decision.status.conditions if c.type == "Regressed")
    assert regressed.status == "True"
    assert [e.reason for e in kinds(decision, PostEvent) if e.warning] == [EvaluationReason.REGRESSED]
    assert kinds(decision, ExportRegressed) == [ExportRegressed((("quality", True),))]


def test_without_a_baseline_the_same_scores_pass() -> None:
    assert finished(spec(), measured(0.6)).status.runs[0].outcome is RunOutcome.PASSED


def test_a_baseline_that_cannot_be_read_makes_the_evaluation_not_ready() -> None:
    problem = "spec.baseline.promoted.rollout: ModelRollout chat has no gate scores"
    decision = finished(spec(baseline={"promoted": {"rollout": "chat"}}), measured(0.6), promoted=problem)
    ready = next(c for c in decision.status.conditions if c.type == "Ready")
    assert (ready.status, ready.reason, ready.message) == ("False", "BaselineUnavailable", problem)


def test_a_stale_test_set_fails_the_run_rather_than_passing() -> None:
    stale = measured(0.9, dated=CREATED - timedelta(days=40))
    run = finished(spec(maxTestSetAge="720h"), stale).status.runs[0]
    assert (run.outcome, run.reason) == (RunOutcome.FAILED, RunReason.TEST_SET_STALE)
    fresh = measured(0.9, dated=CREATED - timedelta(days=2))
    assert finished(spec(maxTestSetAge="720h"), fresh).status.runs[0].outcome is RunOutcome.PASSED


def test_an_undated_result_fails_when_a_maximum_age_is_set() -> None:
    undated = CheckMeasured(GateResult(scores=(Score(name="math", candidate=0.9, samples=50),)))
    run = finished(spec(maxTestSetAge="720h"), undated).status.runs[0]
    assert (run.outcome, run.reason) == (RunOutcome.FAILED, RunReason.TEST_SET_UNDATED)


def test_a_check_that_could_not_measure_fails_the_run_naming_why() -> None:
    missing = "spec.checks[0].evaluator.testSet.configMap: ConfigMap ns/qa not found"
    decision = finished(spec(), CheckFailed(missing))
    run = decision.status.runs[0]
    assert (run.outcome, run.reason) == (RunOutcome.FAILED, RunReason.CHECK_ERROR)
    assert run.checks[0].error == missing
    assert [e.reason for e in kinds(decision, PostEvent) if e.warning] == [EvaluationReason.RUN_FAILED]


def test_a_check_removed_while_its_run_ran_fails_the_run_rather_than_hanging() -> None:
    at = CREATED + timedelta(minutes=1)
    running = started(spec(), at)
    renamed = parse_evaluation_spec(
        {
            **spec().model_dump(by_alias=True, exclude_none=True),
            "checks": [{"name": "other", "job": {"image": "checks/other:1"}}],
        }
    )
    removed = CheckFailed("spec.checks: the check was removed while its run ran")
    run = tick(
        renamed, running, at + timedelta(seconds=5), {"quality": removed}, run_now="first"
    ).status.runs[0]
    assert (run.outcome, run.reason) == (RunOutcome.FAILED, RunReason.CHECK_ERROR)
    assert [check.name for check in run.checks] == ["quality"]


def test_too_few_samples_is_a_failed_run_not_a_pass() -> None:
    run = finished(spec(), measured(0.9, samples=3)).status.runs[0]
    assert (run.outcome, run.reason) == (RunOutcome.FAILED, RunReason.TOO_FEW_SAMPLES)


def test_a_fixed_earlier_run_is_the_baseline_even_after_it_leaves_the_history() -> None:
    first = finished(spec(), measured(0.8))
    run_id = first.status.runs[0].id
    pinned = spec(baseline={"run": {"id": run_id}}, historyLimit=1)
    status = first.status
    at = CREATED + timedelta(minutes=2)
    for value, n in ((0.79, 0), (0.6, 1)):
        status = tick(pinned, status, at, run_now=f"r{n}").status
        at += timedelta(seconds=5)
        status = tick(pinned, status, at, {"quality": measured(value)}, run_now=f"r{n}").status
        at += timedelta(seconds=5)
    assert [run.id for run in status.runs] != [run_id] and len(status.runs) == 1
    assert status.baseline is not None and status.baseline.source == f"run/{run_id}"
    assert status.runs[0].outcome is RunOutcome.REGRESSED


def test_history_keeps_the_newest_runs_and_deletes_the_jobs_of_the_others() -> None:
    limited = spec(historyLimit=2)
    status = ModelEvaluationStatus()
    at = CREATED + timedelta(minutes=1)
    decisions = []
    for n in range(3):
        status = tick(limited, status, at, run_now=f"r{n}").status
        at += timedelta(seconds=2)
        decision = tick(limited, status, at, {"quality": measured(0.8)}, run_now=f"r{n}")
        decisions.append(decision)
        status = decision.status
        at += timedelta(seconds=2)
    assert len(status.runs) == 2 and status.runs[0].started_at > status.runs[1].started_at
    oldest_job = decisions[0].status.runs[0].checks[0].job
    deleted = [name for d in decisions for action in kinds(d, DeleteJobs) for name in action.names]
    assert oldest_job in deleted


@pytest.mark.parametrize("schedule", ["61 * * * *", "* * *", "0 0 30 2 *", "5-1 * * * *", "@often"])
def test_a_malformed_schedule_is_refused_naming_the_field(schedule: str) -> None:
    with pytest.raises(ValueError, match=r"spec\.schedule"):
        spec(schedule=schedule)


@pytest.mark.parametrize(
    "bound", [{"maxTokensRatio": 1.5}, {"capabilityTokensRatios": [{"name": "m", "max": 2}]}]
)
def test_a_tokens_ratio_is_refused_where_no_two_models_are_compared(bound: dict[str, Any]) -> None:
    with pytest.raises(InvalidSpecError, match="compares no two models"):
        spec(
            checks=[{"name": "quality", "job": {"image": "checks/quality:1"}, "policy": {**POLICY, **bound}}]
        )
