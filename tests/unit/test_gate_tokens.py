"""Tokens per task in the gate (core/gate_judgement.py through the check's judgement): both sides'
means shown per capability and overall, and the policy's bound on the candidate's ratio to the
incumbent's passing, failing, or Inconclusive when counts are missing, incomplete or too few."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from modelgate.api import Verdict
from modelgate.api.gate import CheckPolicy, GateCheck
from modelgate.api.gate_result import CapabilityTokens, GateResult, Score, SideTokens
from modelgate.api.gate_status import CheckState, CheckStatus
from modelgate.core.gate_judgement import judge_result

NOW = datetime(2026, 12, 1, tzinfo=UTC)


def side(per_task: int, counted: int = 40, uncounted: int = 0) -> SideTokens:
    return SideTokens(tokens=per_task * counted, counted=counted, uncounted=uncounted)


def tokens(name: str, candidate: SideTokens, incumbent: SideTokens) -> CapabilityTokens:
    return CapabilityTokens(name=name, candidate=candidate, incumbent=incumbent)


def judged(policy: dict[str, Any], *entries: CapabilityTokens) -> CheckStatus:
    score = Score(name="math", candidate=0.9, incumbent=0.9, samples=40)
    check = GateCheck.model_validate(
        {"name": "quality", "job": {"image": "check:1"}, "policy": {"minSamples": 20, **policy}}
    )
    running = CheckStatus(name="quality", job="chat-quality-0", state=CheckState.RUNNING)
    return judge_result(check, running, GateResult(scores=(score,), tokens=entries), NOW)


@pytest.mark.parametrize(
    ("candidate", "verdict"),
    [
        (side(30), Verdict.PASS),  # 1.5x: at the bound
        (side(31), Verdict.FAIL),  # 1.55x
        (side(40), Verdict.FAIL),  # twice the incumbent's
        (side(10), Verdict.PASS),  # fewer tokens
    ],
)
def test_the_overall_ratio_is_held_to_max_tokens_ratio(candidate: SideTokens, verdict: Verdict) -> None:
    status = judged({"maxTokensRatio": 1.5}, tokens("math", candidate, side(20)))

    assert status.verdict is verdict
    assert status.overall_tokens is not None and status.overall_tokens.verdict is verdict


def test_the_overall_ratio_is_of_means_over_every_capability_not_a_mean_of_ratios() -> None:
    # math: 10 vs 10 on 100 items; code: 100 vs 40 on 20 items. Over all: 3000/120 vs 1800/120,
    # 1.67 (the mean of the two ratios would be 1.75).
    math = tokens("math", side(10, counted=100), side(10, counted=100))
    code = tokens("code", side(100, counted=20), side(40, counted=20))

    status = judged({"maxTokensRatio": 1.7}, math, code)

    overall = status.overall_tokens
    assert overall is not None
    assert (overall.candidate, overall.incumbent) == (pytest.approx(3000 / 120), pytest.approx(1800 / 120))
    assert overall.ratio == pytest.approx(3000 / 1800) and overall.verdict is Verdict.PASS


def test_a_capabilitys_own_bound_judges_its_ratio_alone() -> None:
    math = tokens("math", side(10), side(10))
    code = tokens("code", side(30), side(10))  # 3x on code, 2x overall
    policy = {"capabilityTokensRatios": [{"name": "math", "max": 1.2}, {"name": "code", "max": 3}]}

    status = judged(policy, math, code)

    assert status.verdict is Verdict.PASS
    assert {t.name: (t.ratio, t.verdict) for t in status.tokens} == {
        "math": (pytest.approx(1.0), Verdict.PASS),
        "code": (pytest.approx(3.0), Verdict.PASS),
    }
    assert status.overall_tokens is not None and status.overall_tokens.verdict is None  # unbounded

    assert (
        judged({"capabilityTokensRatios": [{"name": "code", "max": 2.5}]}, math, code).verdict is Verdict.FAIL
    )


@pytest.mark.parametrize(
    ("policy", "entries"),
    [
        # A result without token counts (a custom check, or counts given up to fit the message).
        ({"maxTokensRatio": 1.5}, ()),
        ({"capabilityTokensRatios": [{"name": "code", "max": 1.5}]}, (tokens("math", side(10), side(10)),)),
        # Answers that came without a count: the mean of the others could be anything.
        ({"maxTokensRatio": 1.5}, (tokens("math", side(10, uncounted=1), side(10)),)),
        ({"maxTokensRatio": 1.5}, (tokens("math", side(10), side(10, uncounted=3)),)),
        # No count at all on one side, and fewer counted answers than minSamples.
        ({"maxTokensRatio": 1.5}, (tokens("math", SideTokens(tokens=0, counted=0, uncounted=40), side(10)),)),
        ({"maxTokensRatio": 1.5}, (tokens("math", side(10, counted=19), side(10)),)),
    ],
)
def test_missing_or_incomplete_counts_are_inconclusive_never_a_pass(
    policy: dict[str, Any], entries: tuple[CapabilityTokens, ...]
) -> None:
    status = judged(policy, *entries)

    assert status.verdict is Verdict.INCONCLUSIVE
    assert status.message is not None and "tokens per task" in status.message


def test_an_unknown_mean_is_shown_as_unknown_not_as_zero() -> None:
    status = judged({}, tokens("math", SideTokens(tokens=0, counted=0, uncounted=40), side(10)))

    (math,) = status.tokens
    assert (math.candidate, math.incumbent, math.uncounted, math.ratio) == (None, 10, 40, None)
    assert status.verdict is Verdict.PASS  # the policy bounds no tokens: only shown


def test_a_candidate_using_tokens_where_the_incumbent_used_none_fails() -> None:
    status = judged({"maxTokensRatio": 100}, tokens("math", side(1), side(0)))

    assert status.verdict is Verdict.FAIL


def test_both_sides_means_are_in_status_per_capability() -> None:
    status = judged(
        {"maxTokensRatio": 2}, tokens("math", side(24), side(12)), tokens("code", side(5), side(5))
    )

    assert [(t.name, t.candidate, t.incumbent, t.candidate_counted) for t in status.tokens] == [
        ("math", 24, 12, 40),
        ("code", 5, 5, 40),
    ]


def test_a_result_naming_a_capability_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="each capability at most once"):
        GateResult(tokens=(tokens("math", side(1), side(1)), tokens("math", side(2), side(2))))


def test_the_ratio_bound_is_positive_and_finite_in_the_policy() -> None:
    for bad in (0, -1, 1000, float("inf")):
        with pytest.raises(ValueError, match=r"max_tokens_ratio|maxTokensRatio"):
            CheckPolicy.model_validate({"maxTokensRatio": bad})
