"""The pairwise judge: blind questions, verdicts read from replies, position bias cancelled by asking
both orders, and the Wilson lower bound of the win share against hand-computed values."""

from __future__ import annotations

import pytest

from modelgate.core.gate_scores import wilson_lower_bound, win_share
from modelgate.evaluator.pairwise_judge import (
    Outcome,
    Verdict,
    judge_messages,
    pair_outcome,
    parse_verdict,
    question_text,
    tally,
)

A, B, TIE = Verdict.A, Verdict.B, Verdict.TIE


@pytest.mark.parametrize(
    ("candidate_as_a", "candidate_as_b", "outcome"),
    [
        (A, B, Outcome.WIN),  # both orders prefer the candidate
        (B, A, Outcome.LOSS),  # both orders prefer the incumbent
        (A, A, Outcome.TIE),  # always the first position: pure position bias
        (B, B, Outcome.TIE),  # always the second position
        (TIE, B, Outcome.TIE),
        (A, TIE, Outcome.TIE),
        (TIE, TIE, Outcome.TIE),
    ],
)
def test_only_orders_that_agree_make_a_win_or_a_loss(
    candidate_as_a: Verdict, candidate_as_b: Verdict, outcome: Outcome
) -> None:
    assert pair_outcome(candidate_as_a, candidate_as_b) is outcome


def test_a_judge_that_always_picks_the_first_answer_scores_a_tie_on_every_pair() -> None:
    win_rate, left_out = tally([(A, A)] * 20, "judge")

    assert (win_rate.wins, win_rate.ties, win_rate.losses, left_out) == (0, 20, 0, 0)
    # Asked in one order only, the same judge would have given the candidate 20 wins of 20. Counted
    # as half wins, 20 ties are a share of 0.5; Wilson at 95% (z = 1.959964, z^2 = 3.841459, n = 20):
    #   centre = 0.5 + z^2 / (2n) = 0.5 + 0.096036 = 0.596036
    #   margin = z * sqrt(0.5 * 0.5 / 20 + z^2 / (4 n^2)) = 1.959964 * sqrt(0.0125 + 0.002401) = 0.239252
    #   lower = (0.596036 - 0.239252) / (1 + z^2 / n) = 0.356784 / 1.192073 = 0.299298
    assert win_share(0, 20, 0) == 0.5
    assert wilson_lower_bound(0, 20, 0, 0.95) == pytest.approx(0.299298, abs=1e-5)


def test_a_judge_biased_on_some_asks_turns_those_pairs_into_ties() -> None:
    # 10 pairs on which the judge prefers the candidate. On 2 of them the order with the candidate
    # as B was answered by position (A): the orders disagree, a tie. On 1 the order with the
    # candidate as A was answered by position: A, which happens to agree, still a win.
    verdicts = [(A, B)] * 7 + [(A, A)] * 2 + [(A, B)]
    win_rate, _ = tally(verdicts, None)

    assert (win_rate.wins, win_rate.ties, win_rate.losses) == (8, 2, 0)


def test_a_pair_without_a_readable_verdict_in_both_orders_is_left_out_and_counted() -> None:
    win_rate, left_out = tally([(A, B), (None, B), (B, None), (B, A)], "judge")

    assert (win_rate.wins, win_rate.ties, win_rate.losses, left_out) == (1, 0, 1, 2)


@pytest.mark.parametrize(
    ("wins", "ties", "losses", "share", "lower"),
    [
        # 8 of 10: p = 0.8, centre = 0.8 + 3.841459 / 20 = 0.992073,
        # margin = 1.959964 * sqrt(0.16 / 10 + 3.841459 / 400) = 1.959964 * 0.160011 = 0.313616,
        # lower = (0.992073 - 0.313616) / (1 + 0.384146) = 0.678457 / 1.384146 = 0.490162
        (8, 0, 2, 0.8, 0.490162),
        # 6 wins and 4 ties are 8 wins' worth of 10: the same share and bound
        (6, 4, 0, 0.8, 0.490162),
        # 30, 6, 4 of 40: p = 33 / 40 = 0.825, centre = 0.825 + 3.841459 / 80 = 0.873018,
        # margin = 1.959964 * sqrt(0.825 * 0.175 / 40 + 3.841459 / 6400) = 1.959964 * 0.064881 = 0.127164,
        # lower = 0.745854 / (1 + 3.841459 / 40) = 0.745854 / 1.096036 = 0.680500
        (30, 6, 4, 0.825, 0.680500),
        # all 20 won: p = 1, centre - margin = 1 + z^2/40 - z^2/40 = 1, lower = 1 / 1.192073 = 0.838875
        (20, 0, 0, 1.0, 0.838875),
    ],
)
def test_wilson_lower_bound_matches_the_hand_computed_value(
    wins: int, ties: int, losses: int, share: float, lower: float
) -> None:
    assert win_share(wins, ties, losses) == pytest.approx(share)
    assert wilson_lower_bound(wins, ties, losses, 0.95) == pytest.approx(lower, abs=1e-5)


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("A", A),
        ("b", B),
        ("Tie", TIE),
        ("[[A]] because it is right", A),
        ("B. The second answer is clearer.", B),
        ("A good answer would say", A),  # it starts with A: the instructions ask for the verdict first
        ("Answer A is better", None),
        ("Both are fine", None),
        ("", None),
    ],
)
def test_the_verdict_is_the_word_a_reply_starts_with(reply: str, verdict: Verdict | None) -> None:
    assert parse_verdict(reply) is verdict


def test_the_judge_sees_the_question_and_the_answers_only() -> None:
    messages = judge_messages("What is 6 x 7?", "42", "41")
    text = "\n".join(m["content"] for m in messages)

    assert "What is 6 x 7?" in text and "[Answer A]\n42" in text and "[Answer B]\n41" in text
    assert not any(word in text.lower() for word in ("candidate", "incumbent", "model"))


def test_a_conversation_is_shown_to_the_judge_with_its_roles() -> None:
    single = [{"role": "user", "content": "hi"}]
    several = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    ]

    assert question_text(single) == "hi"
    assert question_text(several) == "system: Be brief.\nuser: hi"
