"""The gate's judgement (core/gate_judgement.py): each score against its bounds, the win rate's lower
bound, the test set's age, the check's verdict, and the decision from all checks, on hand-worked cases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from modelgate.api import Verdict
from modelgate.api.gate import CheckPolicy, GateCheck, GateSpec
from modelgate.api.gate_result import GateResult, Score, WinRate
from modelgate.api.gate_status import CheckState, CheckStatus, GateDecision
from modelgate.core.gate_judgement import (
    CheckFailed,
    CheckMeasured,
    CheckRunning,
    decide_gate,
    job_name,
    judge_score,
    judge_win_rate,
    observe_check,
)

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def policy(**fields: Any) -> CheckPolicy:
    return CheckPolicy.model_validate({"minSamples": 20, **fields})


def check(**fields: Any) -> GateCheck:
    return GateCheck.model_validate({"name": "quality", "job": {"image": "check:1"}, **fields})


def running(name: str = "quality") -> CheckStatus:
    return CheckStatus(name=name, job=f"chat-{name}-0", state=CheckState.RUNNING)


def result(*scores: Score, win_rate: WinRate | None = None, dated: datetime | None = None) -> GateResult:
    test_set = None if dated is None else {"name": "qa", "version": "v7", "date": dated}
    return GateResult.model_validate(
        {"testSet": test_set, "scores": [s.model_dump() for s in scores], "winRate": win_rate}
    )


def math(candidate: float, incumbent: float | None = 0.8, samples: int = 50) -> Score:
    return Score(name="math", candidate=candidate, incumbent=incumbent, samples=samples)


@pytest.mark.parametrize(
    ("score", "fields", "verdict"),
    [
        (math(0.82), {"minScore": 0.7, "maxDrop": 0.05}, Verdict.PASS),
        (math(0.6), {"minScore": 0.7}, Verdict.FAIL),  # under the default minimum
        (math(0.74), {"maxDrop": 0.05}, Verdict.FAIL),  # 0.06 below the incumbent's 0.8
        (math(0.75), {"maxDrop": 0.05}, Verdict.PASS),  # exactly at the tolerance
        (math(0.95, samples=19), {"minScore": 0.7}, Verdict.INCONCLUSIVE),  # too few samples
        (math(0.74), {"maxDrop": 0.05, "scores": [{"name": "math", "maxDrop": 0.1}]}, Verdict.PASS),
        (math(0.9), {"scores": [{"name": "math", "max": 0.85}]}, Verdict.FAIL),
        (math(0.6, incumbent=None), {"maxDrop": 0.05}, Verdict.PASS),  # nothing to compare with
    ],
)
def test_a_score_is_held_to_its_bounds(score: Score, fields: dict[str, Any], verdict: Verdict) -> None:
    judged = judge_score(score, policy(**fields))
    assert judged.verdict is verdict, judged.message
    assert judged.message.startswith("math: ")


def test_a_lower_is_better_score_fails_when_it_rises_past_the_tolerance() -> None:
    errors = Score(
        name="replay-error-rate", candidate=0.05, incumbent=0.01, samples=200, lower_is_better=True
    )
    judged = judge_score(errors, policy(minScore=0.7, maxDrop=0.02))
    # minScore is for higher-is-better scores only: the rise of 0.04 is what fails.
    assert judged.verdict is Verdict.FAIL
    assert judged.min is None and judged.max_drop == 0.02


def test_a_failing_score_names_its_value_the_incumbents_and_the_bound() -> None:
    judged = judge_score(math(0.7), policy(maxDrop=0.05))
    assert "0.7" in judged.message and "0.8" in judged.message and "0.05" in judged.message


@pytest.mark.parametrize(
    ("counts", "minimum", "verdict"),
    [
        # 70 wins of 100: share 0.7, Wilson lower bound at 95% = 0.6042.
        ((70, 0, 30), 0.6, Verdict.PASS),
        ((70, 0, 30), 0.61, Verdict.FAIL),
        # 6 of 10 won: too few comparisons for a verdict.
        ((6, 0, 4), 0.1, Verdict.INCONCLUSIVE),
    ],
)
def test_the_win_rate_is_judged_by_its_lower_bound(
    counts: tuple[int, int, int], minimum: float, verdict: Verdict
) -> None:
    wins, ties, losses = counts
    judged = judge_win_rate(
        WinRate(wins=wins, ties=ties, losses=losses), policy(winRate={"minLowerBound": minimum})
    )
    assert judged is not None
    assert judged.verdict is verdict, judged.message
    assert judged.lower_bound == pytest.approx(0.6042, abs=1e-4) if counts == (70, 0, 30) else True


def test_a_higher_average_with_a_low_win_rate_bound_fails_the_check() -> None:
    spec = check(policy={"minSamples": 20, "maxDrop": 0.05, "winRate": {"minLowerBound": 0.5}})
    # Better on the test set, but the judge prefers it in only 55 of 100 pairs: bound 0.452.
    measured = result(math(0.9), win_rate=WinRate(wins=55, ties=0, losses=45))
    judged = observe_check(spec, running(), CheckMeasured(measured), NOW)
    assert judged.verdict is Verdict.FAIL
    assert judged.win_rate is not None and judged.win_rate.lower_bound < 0.5
    assert "win rate" in (judged.message or "")


def test_a_stale_test_set_fails_and_a_fresh_one_passes() -> None:
    spec = check(policy={"minSamples": 20, "maxTestSetAge": "720h"})
    stale = observe_check(
        spec, running(), CheckMeasured(result(math(0.9), dated=NOW - timedelta(days=31))), NOW
    )
    fresh = observe_check(
        spec, running(), CheckMeasured(result(math(0.9), dated=NOW - timedelta(days=29))), NOW
    )
    assert (stale.verdict, fresh.verdict) == (Verdict.FAIL, Verdict.PASS)
    assert "stale" in (stale.message or "") and stale.test_set is not None and stale.test_set.version == "v7"


def test_an_undated_result_is_inconclusive_when_the_policy_limits_the_age() -> None:
    spec = check(policy={"minSamples": 20, "maxTestSetAge": "720h"})
    assert (
        observe_check(spec, running(), CheckMeasured(result(math(0.9))), NOW).verdict is Verdict.INCONCLUSIVE
    )


@pytest.mark.parametrize(
    ("measured", "fields"),
    [
        (result(), {}),  # measured nothing
        (result(math(0.9)), {"requiredScores": ["coding"]}),
        (result(math(0.9)), {"winRate": {"minLowerBound": 0.5}}),
    ],
)
def test_a_result_missing_what_the_policy_needs_is_inconclusive(
    measured: GateResult, fields: dict[str, Any]
) -> None:
    spec = check(policy={"minSamples": 20, **fields})
    assert observe_check(spec, running(), CheckMeasured(measured), NOW).verdict is Verdict.INCONCLUSIVE


@pytest.mark.parametrize(
    ("on_error", "verdict"), [("Reject", Verdict.FAIL), ("Inconclusive", Verdict.INCONCLUSIVE)]
)
def test_a_check_that_could_not_measure_follows_on_error(on_error: str, verdict: Verdict) -> None:
    judged = observe_check(check(onError=on_error), running(), CheckFailed("timed out after 1m"), NOW)
    assert (judged.state, judged.verdict) == (CheckState.ERROR, verdict)
    assert "timed out after 1m" in (judged.message or "")


def test_a_running_check_has_no_verdict_and_a_judged_one_keeps_its_own() -> None:
    spec = check()
    assert observe_check(spec, running(), CheckRunning("Pod pending"), NOW).verdict is None
    judged = observe_check(spec, running(), CheckFailed("failed"), NOW)
    assert observe_check(spec, judged, CheckMeasured(result(math(0.9))), NOW) == judged


def verdicts(*pairs: tuple[str, Verdict | None]) -> tuple[CheckStatus, ...]:
    return tuple(running(name).model_copy(update={"verdict": v, "message": str(v)}) for name, v in pairs)


CHECKS = [{"name": "a", "job": {"image": "x"}}, {"name": "b", "job": {"image": "x"}}]
GATE = GateSpec.model_validate({"checks": CHECKS})


@pytest.mark.parametrize(
    ("a", "b", "fields", "decision"),
    [
        (Verdict.PASS, Verdict.PASS, {}, GateDecision.CANARY),  # full release not allowed by default
        (Verdict.PASS, Verdict.PASS, {"full": {"allowed": True}}, GateDecision.FULL),
        (Verdict.PASS, Verdict.FAIL, {"full": {"allowed": True}}, GateDecision.REJECT),
        (Verdict.PASS, Verdict.INCONCLUSIVE, {"full": {"allowed": True}}, GateDecision.CANARY),
        (Verdict.PASS, Verdict.INCONCLUSIVE, {"inconclusive": "Reject"}, GateDecision.REJECT),
        (Verdict.INCONCLUSIVE, Verdict.FAIL, {}, GateDecision.REJECT),
    ],
)
def test_the_decision_rule(a: Verdict, b: Verdict, fields: dict[str, Any], decision: GateDecision) -> None:
    spec = GateSpec.model_validate({"checks": CHECKS, **fields})
    outcome = decide_gate(spec, verdicts(("a", a), ("b", b)))
    assert outcome is not None and outcome.decision is decision


def test_no_decision_while_a_check_runs() -> None:
    assert decide_gate(GATE, verdicts(("a", Verdict.FAIL), ("b", None))) is None


def test_job_names_are_stable_per_run_and_fit_a_label() -> None:
    name = job_name("a" * 60, "uid-1", "3-20261201T000000", "c" * 40)
    assert len(name) <= 63
    assert name == job_name("a" * 60, "uid-1", "3-20261201T000000", "c" * 40)
    assert name != job_name("a" * 60, "uid-1", "4-20261201T000100", "c" * 40)
