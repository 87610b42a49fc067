"""The blind pairwise judge: what it is asked, how its reply is read, and how the two orders of a
pair make one outcome. Pure.

The judge sees the question and two answers labelled A and B, never which model wrote which. Each
pair is asked in both orders (candidate as A, and incumbent as A). A judge that favours a position
contradicts itself across the two orders: only when both orders prefer the same model does the pair
count as a win (the candidate) or a loss (the incumbent); orders that disagree, or a tie in either,
make a tie. Ties count as half a win in the win share (core/gate_scores.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any

from modelgate.api.gate_result import WinRate

# The sections of the judge's question; the model-server double's judge mode reads them too.
QUESTION_MARK = "[Question]"
ANSWER_A_MARK = "[Answer A]"
ANSWER_B_MARK = "[Answer B]"
INSTRUCTIONS = (
    "You are an impartial judge. Compare two answers to the same question for correctness, "
    "helpfulness and clarity; their order and length say nothing about their quality. Reply with "
    "exactly one word first: A if answer A is better, B if answer B is better, tie if neither is."
)
_VERDICT = re.compile(r"^\W*(A|B|tie)\b", re.IGNORECASE)


class Verdict(StrEnum):
    A = "A"
    B = "B"
    TIE = "tie"


class Outcome(StrEnum):
    WIN = "win"
    TIE = "tie"
    LOSS = "loss"


def judge_messages(question: str, answer_a: str, answer_b: str) -> list[dict[str, str]]:
    """The chat messages of one ask. Only the question and the two answers: no model names."""
    body = f"{QUESTION_MARK}\n{question}\n\n{ANSWER_A_MARK}\n{answer_a}\n\n{ANSWER_B_MARK}\n{answer_b}"
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": body}]


def question_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """A conversation as the judge reads it: one message alone as its text, several as role: text."""
    texts = [(str(m.get("role", "")), _content_text(m.get("content"))) for m in messages]
    if len(texts) == 1:
        return texts[0][1]
    return "\n".join(f"{role}: {text}" for role, text in texts)


def _content_text(content: Any) -> str:
    # OpenAI content may be a list of parts; the text parts are what a judge can read.
    if isinstance(content, list):
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def parse_verdict(reply: str) -> Verdict | None:
    """The verdict the reply starts with (`A`, `B` or `tie`, any case, after punctuation such as
    `[[`), or None when it starts with none of them."""
    match = _VERDICT.match(reply)
    if match is None:
        return None
    word = match.group(1)
    return Verdict.TIE if word.lower() == "tie" else Verdict(word.upper())


def pair_outcome(candidate_as_a: Verdict, candidate_as_b: Verdict) -> Outcome:
    """One pair's outcome from the verdicts of its two orders."""
    candidate_preferred = (candidate_as_a is Verdict.A, candidate_as_b is Verdict.B)
    incumbent_preferred = (candidate_as_a is Verdict.B, candidate_as_b is Verdict.A)
    if all(candidate_preferred):
        return Outcome.WIN
    if all(incumbent_preferred):
        return Outcome.LOSS
    return Outcome.TIE


def tally(
    verdicts: Sequence[tuple[Verdict | None, Verdict | None]], judge: str | None
) -> tuple[WinRate, int]:
    """The win rate of pairs from their (candidate as A, candidate as B) verdicts, and how many pairs
    were left out for want of a readable verdict in both orders (None: the ask failed, or its reply
    started with no verdict)."""
    outcomes = [pair_outcome(as_a, as_b) for as_a, as_b in verdicts if as_a is not None and as_b is not None]
    left_out = len(verdicts) - len(outcomes)
    win_rate = WinRate(
        wins=outcomes.count(Outcome.WIN),
        ties=outcomes.count(Outcome.TIE),
        losses=outcomes.count(Outcome.LOSS),
        judge=judge,
    )
    return win_rate, left_out
