"""How the model-server double answers like a model, and like a judge.

**A model.** Answers are deterministic per model version. The double may know a test set (the JSONL
`modelgate eval` reads, docs/gate-eval.md): asked an item's prompt, it answers the item's reference
(right) or a wrong answer. Which items a version gets right is decided per capability: the items are
ranked by a hash of the version and the item's id, and the first round(n x share) are right, so a
version scores exactly its configured share and reruns agree. Other prompts get the double's canned
answer, led by the version's signature: a word of letters derived from the version, standing for
the recognisable style of a real model's answers (two versions answer differently; a version always
the same).

**A judge.** Asked which of two answers is better (the evaluator's judge question: a question and
answers A and B), the judge double prefers the answer that carries the signature of the version it
is told to prefer, in a configured share of the pairs (decided per pair, the same in both orders);
two answers both or neither from that version are a tie. With a position bias, a share of the asks
(decided per ask) is answered A whatever the answers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from testbed.shares import rounded_count

# The evaluator's modules (and through them modelgate.api, 0.15 s of a double's 0.75 s start) are
# imported where a test set is read or a judge question answered: make test starts ~180 doubles.
if TYPE_CHECKING:
    from modelgate.evaluator.pairwise_judge import Verdict
    from modelgate.evaluator.testset import Item

# A wrong answer fails every kind of check: not the expected text, no number, not JSON.
WRONG_ANSWER = "I do not know the answer to that"


class Answers(BaseModel):
    """What the double answers to prompts."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: str | None = Field(default=None, description="the model version (default: the model name)")
    test_set: str | None = Field(default=None, description="path of a test set JSONL whose items it knows")
    correct: dict[str, Annotated[float, Field(ge=0, le=1)]] = Field(
        default_factory=dict, description="per capability, the share of its items answered right"
    )
    default_correct: float = Field(default=1.0, ge=0, le=1, description="for capabilities not in correct")


class Judging(BaseModel):
    """The double as a pairwise judge (every chat request is then a judge question)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prefers: str = Field(min_length=1, description="the version whose answers it prefers")
    preference: float = Field(default=1.0, ge=0, le=1, description="share of pairs where it does")
    position_bias: float = Field(default=0.0, ge=0, le=1, description="share of asks answered A regardless")


def signature(version: str) -> str:
    """A word of eight letters, the same for a version every time (no digits: number checks skip it)."""
    digest = hashlib.sha256(version.encode()).digest()
    return "".join(chr(ord("a") + byte % 26) for byte in digest[:8])


def _unit(*parts: str) -> float:
    """A number in [0, 1) that the parts decide."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class Answerer:
    """A version's answers. Raises ValueError for a test set it cannot use."""

    def __init__(self, answers: Answers, model_name: str) -> None:
        self.version = answers.version or model_name
        self._known: dict[str, tuple[Item, bool]] = {}
        if answers.test_set is not None:
            from modelgate.evaluator.testset import parse_test_set

            items = parse_test_set(Path(answers.test_set).read_text(encoding="utf-8"), answers.test_set).items
            self._known = self._decide(items, answers)

    def _decide(self, items: Sequence[Item], answers: Answers) -> dict[str, tuple[Item, bool]]:
        """Each item's prompt -> (the item, answered right)."""
        known = {}
        for capability in dict.fromkeys(item.capability for item in items):
            ranked = sorted(
                (item for item in items if item.capability == capability),
                key=lambda item: hashlib.sha256(f"{self.version}/{item.id}".encode()).digest(),
            )
            right = rounded_count(len(ranked), answers.correct.get(capability, answers.default_correct))
            for rank, item in enumerate(ranked):
                if rank < right and item.reference is None:
                    raise ValueError(f"item {item.id} has no reference: the double cannot answer it right")
                known[item.prompt] = (item, rank < right)
        return known

    def answer(self, messages: Sequence[Mapping[str, Any]]) -> str | None:
        """The answer to a test-set item, or None for a prompt the double does not know."""
        known = self._known.get(str(messages[-1].get("content", "")))
        if known is None:
            return None
        item, right = known
        return (
            item.reference
            if right and item.reference is not None
            else f"{WRONG_ANSWER} {signature(self.version)}"
        )

    def signed(self, words: Sequence[str]) -> list[str]:
        """The canned answer's words with the version's signature first (as many words)."""
        return [signature(self.version), *words[1:]] if words else []


def judge_verdict(judging: Judging, messages: Sequence[Mapping[str, Any]]) -> Verdict:
    """Raises ValueError when the last message is not the evaluator's judge question."""
    from modelgate.evaluator.pairwise_judge import Verdict

    question, answer_a, answer_b = _judge_question(str(messages[-1].get("content", "")))
    if _unit("position", question, answer_a, answer_b) < judging.position_bias:
        return Verdict.A
    preferred = signature(judging.prefers)
    a_preferred, b_preferred = preferred in answer_a.split(), preferred in answer_b.split()
    if a_preferred == b_preferred:
        return Verdict.TIE
    # Decided per pair: the same key in both orders.
    keeps_preference = _unit("pair", question, *sorted((answer_a, answer_b))) < judging.preference
    return Verdict.A if a_preferred == keeps_preference else Verdict.B


def _judge_question(text: str) -> tuple[str, str, str]:
    from modelgate.evaluator.pairwise_judge import ANSWER_A_MARK, ANSWER_B_MARK, QUESTION_MARK

    before_a, marker_a, rest = text.partition(f"\n\n{ANSWER_A_MARK}\n")
    answer_a, marker_b, answer_b = rest.partition(f"\n\n{ANSWER_B_MARK}\n")
    if not (before_a.startswith(f"{QUESTION_MARK}\n") and marker_a and marker_b):
        raise ValueError(
            f"not a judge question: expected {QUESTION_MARK}, {ANSWER_A_MARK} and {ANSWER_B_MARK}"
        )
    return before_a.removeprefix(f"{QUESTION_MARK}\n"), answer_a, answer_b
