"""Scores from replies, and the GateResult within the 4096 bytes of a termination message."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from modelgate.api.gate_result import (
    TERMINATION_MESSAGE_LIMIT,
    CapabilityTokens,
    GateResult,
    Score,
    SideTokens,
    TestSetIdentity,
    WinRate,
)
from modelgate.evaluator.answer_checks import ExactCheck
from modelgate.evaluator.jsonl import InputError
from modelgate.evaluator.result import ResultTooLarge, failure_result, gate_result, result_json
from modelgate.evaluator.scoring import Reply, capability_counts, capability_scores, replay_scores
from modelgate.evaluator.summary import summary_text
from modelgate.evaluator.testset import Item
from modelgate.refusal_classifier import DEFAULT_PATTERNS, RefusalPatterns

IDENTITY = TestSetIdentity(name="qa", version="2026-11-28", date=datetime(2026, 11, 28, tzinfo=UTC))


def item(capability: str, n: int) -> Item:
    return Item(f"{capability}-{n}", capability, f"prompt {n}", ExactCheck("yes"), "yes")


def answered(text: str, latency: float = 0.1, finish_reason: str = "stop") -> Reply:
    return Reply(text, finish_reason, latency)


def test_capability_scores_are_the_share_of_passing_answers_per_tag() -> None:
    items = [item("math", n) for n in range(4)] + [item("code", n) for n in range(2)]
    candidate = [answered("yes")] * 3 + [Reply(None, error="HTTP 500")] + [answered("yes"), answered("no")]
    incumbent = [answered("yes")] * 2 + [answered("no")] * 2 + [answered("yes")] * 2

    scores = capability_scores(items, candidate, incumbent)

    assert [(s.name, s.candidate, s.incumbent, s.samples) for s in scores] == [
        ("math", 0.75, 0.5, 4),
        ("code", 0.5, 1.0, 2),
    ]


def test_replay_scores_compare_errors_refusals_latency_length_and_changes() -> None:
    candidate = [
        answered("Sure: 12345", 0.1),
        answered("I'm sorry, but I can't help with that.", 0.2),
        Reply(None, error="HTTP 500"),
        answered("cut", 0.4, "content_filter"),
    ]
    incumbent = [
        answered("Sure: 12345", 0.3),
        answered("fine", 0.3),
        answered("okay", 0.3),
        answered("x", 0.9),
    ]

    scores = {s.name: s for s in replay_scores(candidate, incumbent, RefusalPatterns.of(DEFAULT_PATTERNS))}

    assert (scores["replay-error-rate"].candidate, scores["replay-error-rate"].incumbent) == (0.25, 0.0)
    # Refusals among the 3 answered: the worded one and the filtered one.
    assert scores["replay-refusal-rate"].candidate == pytest.approx(2 / 3, abs=1e-4)
    assert scores["replay-refusal-rate"].samples == 3
    # Nearest rank: the ceil(0.95 x 3) = 3rd of 0.1, 0.2, 0.4.
    assert scores["replay-p95-latency-seconds"].candidate == 0.4
    assert scores["replay-p95-latency-seconds"].incumbent == 0.9
    assert scores["replay-mean-answer-chars"].candidate == pytest.approx((11 + 38 + 3) / 3, abs=1e-4)
    # Of the 3 pairs both answered, 2 differ; the incumbent has no value of its own.
    changed = scores["replay-changed-answers"]
    assert (changed.candidate, changed.incumbent, changed.samples) == (
        pytest.approx(2 / 3, abs=1e-4),
        None,
        3,
    )
    assert all(scores[name].lower_is_better for name in ("replay-error-rate", "replay-refusal-rate"))


def many_scores(count: int) -> list[Score]:
    # Long names and four-digit values: the widest a capability score gets in practice.
    return [
        Score(name=f"capability-with-a-long-name-{n:03d}", candidate=0.8125, incumbent=0.7917, samples=1200)
        for n in range(count)
    ]


def test_thirty_capabilities_and_the_replay_fit_in_a_termination_message() -> None:
    replay = replay_scores([answered("a")] * 3, [answered("b")] * 3, RefusalPatterns.of(DEFAULT_PATTERNS))
    result = gate_result(IDENTITY, [*many_scores(30), *replay], WinRate(wins=9, ties=1, losses=0), replayed=3)

    text = result_json(result)

    assert len(text.encode()) <= TERMINATION_MESSAGE_LIMIT
    assert GateResult.model_validate_json(text) == result  # nothing lost: the operator reads the same


def test_the_summary_line_gives_way_before_any_score() -> None:
    result = gate_result(IDENTITY, many_scores(5), None, replayed=0)
    whole = result_json(result, limit=10_000)

    kept = GateResult.model_validate_json(result_json(result, limit=len(whole.encode()) - 1))

    assert kept.scores == result.scores
    assert kept.summary is None


def test_too_many_scores_for_a_termination_message_is_an_error_that_says_what_to_do() -> None:
    with pytest.raises(ResultTooLarge, match="split the test set's capabilities across checks"):
        result_json(gate_result(IDENTITY, many_scores(60), None, replayed=0))


def test_a_failure_result_names_the_problem_within_the_summary_limit() -> None:
    result = failure_result(InputError("x" * 2000))

    assert result.summary is not None and result.summary.startswith("could not measure: xxx")
    assert len(result.summary) == 1024
    assert len(result_json(result).encode()) <= TERMINATION_MESSAGE_LIMIT


def test_the_summary_names_the_regressions_and_the_judges_bound() -> None:
    scores = [
        Score(name="math", candidate=0.9, incumbent=0.8, samples=10),
        Score(name="code", candidate=0.6, incumbent=0.8, samples=10),
        Score(
            name="replay-p95-latency-seconds", candidate=0.5, incumbent=0.4, samples=10, lower_is_better=True
        ),
        Score(name="replay-mean-answer-chars", candidate=90, incumbent=120, samples=10),
    ]
    result = gate_result(IDENTITY, scores, WinRate(wins=8, ties=0, losses=2, judge="j"), replayed=10)

    assert result.summary is not None
    assert (
        "candidate worse on: code, replay-p95-latency-seconds" in result.summary
    )  # shorter answers are neither
    assert "95% lower bound 0.490" in result.summary  # 8 of 10: see test_eval_judge.py
    table = summary_text(result)
    assert "code" in table and "-0.2" in table and "worse" in table


def with_tokens(scores: list[Score]) -> list[CapabilityTokens]:
    # Seven-digit sums: a thousand items of a thousand tokens each.
    side = SideTokens(tokens=1234567, counted=1200)
    return [CapabilityTokens(name=s.name, candidate=side, incumbent=side) for s in scores]


def test_ten_capabilities_with_their_token_counts_fit_in_a_termination_message() -> None:
    replay = replay_scores([answered("a")] * 3, [answered("b")] * 3, RefusalPatterns.of(DEFAULT_PATTERNS))
    scores = many_scores(10)
    result = gate_result(IDENTITY, [*scores, *replay], None, replayed=3, tokens=with_tokens(scores))

    assert GateResult.model_validate_json(result_json(result)) == result


def test_token_counts_give_way_all_at_once_after_the_summary_and_before_any_score() -> None:
    scores = many_scores(25)
    result = gate_result(IDENTITY, scores, None, replayed=0, tokens=with_tokens(scores))

    kept = GateResult.model_validate_json(result_json(result))

    assert kept.scores == result.scores
    assert kept.tokens == () and kept.summary is None  # never some capabilities' counts and not others


def test_the_counts_per_capability_are_sums_of_the_answers_that_reported_one() -> None:
    items = [Item(f"i{n}", "math", "q", ExactCheck("4"), "4") for n in range(4)]
    candidate = [
        Reply("4", output_tokens=10),
        Reply("4", output_tokens=30),
        Reply("5"),  # answered, no count
        Reply(None, error="HTTP 500"),  # no answer: neither counted nor uncounted
    ]
    incumbent = [Reply("4", output_tokens=7)] * 4

    (math,) = capability_counts(items, candidate, incumbent, ["math"])

    assert math.candidate_tokens == SideTokens(tokens=40, counted=2, uncounted=1)
    assert math.incumbent_tokens == SideTokens(tokens=28, counted=4)
    assert math.candidate_tokens.per_task == 20


def test_the_summary_gives_both_sides_tokens_per_task_and_says_when_a_count_is_unknown() -> None:
    unknown = SideTokens(tokens=0, counted=0, uncounted=5)
    tokens = [CapabilityTokens(name="math", candidate=unknown, incumbent=SideTokens(tokens=50, counted=5))]

    result = gate_result(IDENTITY, many_scores(1), None, replayed=0, tokens=tokens)

    assert result.summary is not None
    assert "candidate unknown (5 answers without a count), incumbent 10.0" in result.summary
    assert "unknown" in summary_text(result) and "10.0" in summary_text(result)
