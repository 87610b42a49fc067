"""Scores from replies. Pure: what the endpoints answered in, GateResult scores out."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from modelgate.api.gate_result import Score
from modelgate.chat_answers import Answer, Choice
from modelgate.evaluation.testset import Item
from modelgate.refusal_classifier import RefusalPatterns, classify

# Enough digits for shares of thousands of samples and latencies in tenths of a millisecond, few
# enough to keep the result inside a termination message.
DIGITS = 4


@dataclass(frozen=True)
class Reply:
    """What one endpoint answered one request: the text of a 200 answer, or why there is none. The
    latency is to the whole answer; a streamed answer also has the time to its first content."""

    text: str | None
    finish_reason: str | None = None
    latency_seconds: float | None = None
    first_token_seconds: float | None = None
    error: str | None = None

    @property
    def answered(self) -> bool:
        return self.text is not None


def capability_scores(
    items: Sequence[Item], candidate: Sequence[Reply], incumbent: Sequence[Reply]
) -> list[Score]:
    """Per capability tag (in the order of first appearance), the share of its items whose answer
    passes the item's check; an item without an answer fails."""
    passed: dict[str, list[tuple[bool, bool]]] = {}
    for item, mine, theirs in zip(items, candidate, incumbent, strict=True):
        passed.setdefault(item.capability, []).append((passes(item, mine), passes(item, theirs)))
    return [
        Score(
            name=capability,
            candidate=_share(sum(c for c, _ in results), len(results)),
            incumbent=_share(sum(i for _, i in results), len(results)),
            samples=len(results),
        )
        for capability, results in passed.items()
    ]


def passes(item: Item, reply: Reply) -> bool:
    return reply.text is not None and item.check.passes(reply.text)


def replay_scores(
    candidate: Sequence[Reply], incumbent: Sequence[Reply], refusals: RefusalPatterns
) -> list[Score]:
    """The replay's figures for both sides; `replay-changed-answers` is the candidate's alone."""
    sides = (candidate, incumbent)
    errors = [_share(sum(not r.answered for r in side), len(side)) for side in sides]
    answered = [[r for r in side if r.answered] for side in sides]
    refused = [_share(sum(_refused(r, refusals) for r in side), len(side)) for side in answered]
    p95 = [_p95([r.latency_seconds for r in side if r.latency_seconds is not None]) for side in answered]
    chars = [_mean([len(r.text or "") for r in side]) for side in answered]
    both = [(c, i) for c, i in zip(candidate, incumbent, strict=True) if c.answered and i.answered]
    changed = _share(sum((c.text or "").strip() != (i.text or "").strip() for c, i in both), len(both))
    samples = len(answered[0])
    return [
        Score(name="replay-error-rate", candidate=errors[0], incumbent=errors[1], samples=len(candidate),
              lower_is_better=True),
        Score(name="replay-refusal-rate", candidate=refused[0], incumbent=refused[1], samples=samples,
              lower_is_better=True),
        Score(name="replay-p95-latency-seconds", candidate=p95[0], incumbent=p95[1], samples=samples,
              lower_is_better=True),
        Score(name="replay-mean-answer-chars", candidate=chars[0], incumbent=chars[1], samples=samples),
        Score(name="replay-changed-answers", candidate=changed, samples=len(both)),
    ]  # fmt: skip


def _refused(reply: Reply, refusals: RefusalPatterns) -> bool:
    answer = Answer(None, (Choice(reply.text or "", reply.finish_reason),))
    return classify(answer, refusals) is not None


def _share(count: int, total: int) -> float:
    # No samples: 0 with samples 0, which a policy's minimum sample size reads as Inconclusive.
    return round(count / total, DIGITS) if total else 0.0


def _mean(values: Sequence[int]) -> float:
    return round(sum(values) / len(values), DIGITS) if values else 0.0


def _p95(values: Sequence[float]) -> float:
    """The 95th percentile by nearest rank: a value some request really took."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return round(ordered[math.ceil(0.95 * len(ordered)) - 1], DIGITS)
