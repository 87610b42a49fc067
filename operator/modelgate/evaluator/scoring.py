"""Counts and scores from replies. Pure: what the endpoints answered in, counts (api/gate_shard.py)
and GateResult scores out; scores are taken from counts (core/gate_scores.py)."""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

from modelgate.api.gate_result import NO_TOKENS, Score, SideTokens
from modelgate.api.gate_shard import CapabilityCounts, ReplayCounts, SideCounts, slowest_needed
from modelgate.chat_answers import Answer, Choice
from modelgate.core import gate_scores
from modelgate.core.gate_scores import DIGITS
from modelgate.evaluator.testset import Item
from modelgate.refusal_classifier import RefusalPatterns, classify


@dataclass(frozen=True)
class Reply:
    """What one endpoint answered one request: the text of a 200 answer, or why there is none. The
    latency is to the whole answer; a streamed answer also has the time to its first content. The
    output tokens are what the server reported (None: it reported no count)."""

    text: str | None
    finish_reason: str | None = None
    latency_seconds: float | None = None
    first_token_seconds: float | None = None
    error: str | None = None
    output_tokens: int | None = None

    @property
    def answered(self) -> bool:
        return self.text is not None


def capability_counts(
    items: Sequence[Item], candidate: Sequence[Reply], incumbent: Sequence[Reply], capabilities: Sequence[str]
) -> list[CapabilityCounts]:
    """Per capability tag (every one of `capabilities`, in its order), how many of its items each
    side's answer passes (an item without an answer fails) and how many it did not answer, and each
    side's output tokens."""
    counts = {name: [0, 0, 0, 0, 0] for name in capabilities}
    tokens = {name: [NO_TOKENS, NO_TOKENS] for name in capabilities}
    for item, mine, theirs in zip(items, candidate, incumbent, strict=True):
        tally = counts[item.capability]
        tally[0] += 1
        tally[1] += passes(item, mine)
        tally[2] += passes(item, theirs)
        tally[3] += not mine.answered
        tally[4] += not theirs.answered
        sides = tokens[item.capability]
        sides[0] += reply_tokens(mine)
        sides[1] += reply_tokens(theirs)
    return [
        CapabilityCounts(
            name=name,
            items=n,
            candidate_passed=c,
            incumbent_passed=i,
            candidate_failed=c_failed,
            incumbent_failed=i_failed,
            candidate_tokens=tokens[name][0],
            incumbent_tokens=tokens[name][1],
        )
        for name, (n, c, i, c_failed, i_failed) in counts.items()
    ]


def reply_tokens(reply: Reply) -> SideTokens:
    """One reply's output tokens: counted, uncounted (answered without a count), or none (no answer)."""
    if not reply.answered:
        return NO_TOKENS
    if reply.output_tokens is None:
        return SideTokens(tokens=0, counted=0, uncounted=1)
    return SideTokens(tokens=reply.output_tokens, counted=1)


def capability_scores(
    items: Sequence[Item], candidate: Sequence[Reply], incumbent: Sequence[Reply]
) -> list[Score]:
    """Per capability tag (in the order of first appearance), the share of its items whose answer
    passes the item's check; an item without an answer fails."""
    capabilities = list(dict.fromkeys(item.capability for item in items))
    return gate_scores.capability_scores(capability_counts(items, candidate, incumbent, capabilities))


def passes(item: Item, reply: Reply) -> bool:
    return reply.text is not None and item.check.passes(reply.text)


def replay_counts(
    candidate: Sequence[Reply], incumbent: Sequence[Reply], refusals: RefusalPatterns, replayed: int
) -> ReplayCounts:
    """The counts of both sides' replies to a part of a replay of `replayed` requests in all: each
    side keeps as many of its largest latencies as the whole replay's 95th percentile can need."""
    both = [(c, i) for c, i in zip(candidate, incumbent, strict=True) if c.answered and i.answered]
    return ReplayCounts(
        candidate=_side_counts(candidate, refusals, replayed),
        incumbent=_side_counts(incumbent, refusals, replayed),
        both_answered=len(both),
        changed=sum((c.text or "").strip() != (i.text or "").strip() for c, i in both),
    )


def replay_scores(
    candidate: Sequence[Reply], incumbent: Sequence[Reply], refusals: RefusalPatterns
) -> list[Score]:
    """The replay's figures for both sides; `replay-changed-answers` is the candidate's alone."""
    return gate_scores.replay_scores(replay_counts(candidate, incumbent, refusals, len(candidate)))


def _side_counts(replies: Sequence[Reply], refusals: RefusalPatterns, replayed: int) -> SideCounts:
    answered = [r for r in replies if r.answered]
    latencies = [round(r.latency_seconds, DIGITS) for r in answered if r.latency_seconds is not None]
    return SideCounts(
        asked=len(replies),
        answered=len(answered),
        refused=sum(_refused(r, refusals) for r in answered),
        answer_chars=sum(len(r.text or "") for r in answered),
        timed=len(latencies),
        slowest=tuple(heapq.nlargest(slowest_needed(replayed), latencies)),
    )


def _refused(reply: Reply, refusals: RefusalPatterns) -> bool:
    answer = Answer(None, (Choice(reply.text or "", reply.finish_reason),))
    return classify(answer, refusals) is not None
