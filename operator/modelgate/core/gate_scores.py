"""A gate check's scores from its counts: the shards of a parallel check added up into one result,
the failed requests of each side, and the lower confidence bound of a blind pairwise win rate.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from statistics import NormalDist
from typing import Literal

from modelgate.api import Verdict
from modelgate.api.gate import CheckPolicy
from modelgate.api.gate_result import (
    NO_REQUESTS,
    NO_TOKENS,
    CapabilityRequests,
    CapabilityTokens,
    GateResult,
    Requests,
    Score,
    SideRequests,
    SideTokens,
    WinRate,
)
from modelgate.api.gate_shard import (
    PERCENTILE,
    CapabilityCounts,
    ReplayCounts,
    ShardResult,
    SideCounts,
    slowest_needed,
)
from modelgate.api.gate_status import CapabilityRequestCounts, RequestsVerdict, SideRequestCounts
from modelgate.core.reasons import clip

# -- gate_shards -----------------------------------------------------------------------------------
# The scores of an evaluator check from its counts (api/gate_shard.py), and the shards of a parallel check
# added up into one result. Pure. One Pod's run and a parallel run score through the same functions, from
# counts, so parallelism changes no score: shares are taken once, of the summed counts.


# Enough digits for shares of thousands of samples and latencies in tenths of a millisecond, few
# enough to keep the result inside a termination message.
DIGITS = 4


class ShardsDisagree(ValueError):
    """Shards that are not parts of one run; the message names the index."""


def ratio(count: int, total: int) -> float:
    # No samples: 0 with samples 0, which a policy's minimum sample size reads as Inconclusive.
    return round(count / total, DIGITS) if total else 0.0


def p95(slowest: Sequence[float], timed: int) -> float:
    """The 95th percentile by nearest rank (a value some request really took) of `timed` values whose
    largest are `slowest`, in descending order."""
    if not timed:
        return 0.0
    return round(slowest[timed - math.ceil(PERCENTILE * timed)], DIGITS)


def capability_scores(capabilities: Sequence[CapabilityCounts]) -> list[Score]:
    return [
        Score(
            name=c.name,
            candidate=ratio(c.candidate_passed, c.items),
            incumbent=ratio(c.incumbent_passed, c.items),
            samples=c.items,
        )
        for c in capabilities
    ]


def replay_scores(replay: ReplayCounts) -> list[Score]:
    """The replay's figures for both sides; `replay-changed-answers` is the candidate's alone."""
    sides = (replay.candidate, replay.incumbent)
    errors = [ratio(s.asked - s.answered, s.asked) for s in sides]
    refused = [ratio(s.refused, s.answered) for s in sides]
    latency = [p95(s.slowest, s.timed) for s in sides]
    chars = [ratio(s.answer_chars, s.answered) for s in sides]
    changed = ratio(replay.changed, replay.both_answered)
    asked, answered = replay.candidate.asked, replay.candidate.answered
    return [
        Score(name="replay-error-rate", candidate=errors[0], incumbent=errors[1], samples=asked,
              lower_is_better=True),
        Score(name="replay-refusal-rate", candidate=refused[0], incumbent=refused[1], samples=answered,
              lower_is_better=True),
        Score(name="replay-p95-latency-seconds", candidate=latency[0], incumbent=latency[1],
              samples=answered, lower_is_better=True),
        Score(name="replay-mean-answer-chars", candidate=chars[0], incumbent=chars[1], samples=answered),
        Score(name="replay-changed-answers", candidate=changed, samples=replay.both_answered),
    ]  # fmt: skip


def shard_tokens(shard: ShardResult) -> tuple[CapabilityTokens, ...]:
    """Each capability's output tokens of both sides, where either side answered any of its items;
    none when a shard left its counts out."""
    if shard.tokens_left_out:
        return ()
    return tuple(
        CapabilityTokens(name=c.name, candidate=c.candidate_tokens, incumbent=c.incumbent_tokens)
        for c in shard.capabilities
        if _answered(c.candidate_tokens) or _answered(c.incumbent_tokens)
    )


def _answered(side: SideTokens) -> bool:
    return side.counted + side.uncounted > 0


def shard_requests(shard: ShardResult) -> Requests:
    """Both sides' requests asked and answered: per capability of the test set, and over the test
    set and the replay together."""
    capabilities = tuple(
        CapabilityRequests(
            name=c.name,
            candidate=SideRequests(asked=c.items, answered=c.items - c.candidate_failed),
            incumbent=SideRequests(asked=c.items, answered=c.items - c.incumbent_failed),
        )
        for c in shard.capabilities
    )
    replay = shard.replay
    sides = [
        sum((getattr(entry, side) for entry in capabilities), NO_REQUESTS)
        + (NO_REQUESTS if replay is None else _replayed(getattr(replay, side)))
        for side in ("candidate", "incumbent")
    ]
    return Requests(candidate=sides[0], incumbent=sides[1], capabilities=capabilities)


def _replayed(side: SideCounts) -> SideRequests:
    return SideRequests(asked=side.asked, answered=side.answered)


def shard_scores(shard: ShardResult) -> list[Score]:
    replay = [] if shard.replay is None else replay_scores(shard.replay)
    return capability_scores(shard.capabilities) + replay


def merge_shards(shards: Sequence[ShardResult]) -> ShardResult:
    """The counts of every shard of one run added up, as the shard of one that ran them all; raises
    ShardsDisagree when they are not the shards of one run (each index once, the same test set)."""
    first = _complete(shards)
    for shard in shards[1:]:
        if shard.test_set != first.test_set:
            raise ShardsDisagree(f"shard {shard.index} read another test set than shard 0")
        if [c.name for c in shard.capabilities] != [c.name for c in first.capabilities]:
            raise ShardsDisagree(f"shard {shard.index} found other capabilities than shard 0")
        if (shard.replay is None, shard.win_rate is None) != (first.replay is None, first.win_rate is None):
            raise ShardsDisagree(f"shard {shard.index} measured other things than shard 0")
    replays = [s.replay for s in shards if s.replay is not None]
    win_rates = [s.win_rate for s in shards if s.win_rate is not None]
    return ShardResult(
        index=0,
        shards=1,
        test_set=first.test_set,
        capabilities=tuple(
            _added_capability(list(counts)) for counts in zip(*(s.capabilities for s in shards), strict=True)
        ),
        replay=_added_replay(replays) if replays else None,
        win_rate=_added_win_rate(win_rates) if win_rates else None,
        tokens_left_out=any(s.tokens_left_out for s in shards),
    )


def merged_result(shards: Sequence[ShardResult]) -> GateResult:
    """The GateResult of a parallel check from its shards (ShardsDisagree if they are not one run)."""
    merged = merge_shards(shards)
    items = sum(c.items for c in merged.capabilities)
    replayed = 0 if merged.replay is None else merged.replay.candidate.asked
    judged = 0 if merged.win_rate is None else merged.win_rate.samples
    summary = (
        f"measured in {len(shards)} shards: {items} test-set items, {replayed} replayed requests, "
        f"{judged} judged pairs"
    )
    requests = shard_requests(merged)
    failed = failures_text(requests)
    return GateResult(
        test_set=merged.test_set,
        scores=tuple(shard_scores(merged)),
        win_rate=merged.win_rate,
        summary=summary if failed is None else f"{summary}; {failed}",
        tokens=shard_tokens(merged),
        requests=requests,
    )


def _complete(shards: Sequence[ShardResult]) -> ShardResult:
    if not shards:
        raise ShardsDisagree("no shard wrote a result")
    count = len(shards)
    for position, shard in enumerate(shards):
        if shard.index != position:
            raise ShardsDisagree(f"shard {position} says it is shard {shard.index}")
        if shard.shards != count:
            raise ShardsDisagree(f"shard {position} says it is one of {shard.shards} shards, not {count}")
    return shards[0]


def _added_capability(counts: list[CapabilityCounts]) -> CapabilityCounts:
    return CapabilityCounts(
        name=counts[0].name,
        items=sum(c.items for c in counts),
        candidate_passed=sum(c.candidate_passed for c in counts),
        incumbent_passed=sum(c.incumbent_passed for c in counts),
        candidate_failed=sum(c.candidate_failed for c in counts),
        incumbent_failed=sum(c.incumbent_failed for c in counts),
        candidate_tokens=sum((c.candidate_tokens for c in counts), NO_TOKENS),
        incumbent_tokens=sum((c.incumbent_tokens for c in counts), NO_TOKENS),
    )


def _added_side(sides: list[SideCounts]) -> SideCounts:
    timed = sum(s.timed for s in sides)
    slowest = heapq.nlargest(slowest_needed(timed), (value for s in sides for value in s.slowest))
    return SideCounts(
        asked=sum(s.asked for s in sides),
        answered=sum(s.answered for s in sides),
        refused=sum(s.refused for s in sides),
        answer_chars=sum(s.answer_chars for s in sides),
        timed=timed,
        slowest=tuple(slowest),
    )


def _added_replay(replays: list[ReplayCounts]) -> ReplayCounts:
    return ReplayCounts(
        candidate=_added_side([r.candidate for r in replays]),
        incumbent=_added_side([r.incumbent for r in replays]),
        both_answered=sum(r.both_answered for r in replays),
        changed=sum(r.changed for r in replays),
    )


def _added_win_rate(win_rates: list[WinRate]) -> WinRate:
    return WinRate(
        wins=sum(w.wins for w in win_rates),
        ties=sum(w.ties for w in win_rates),
        losses=sum(w.losses for w in win_rates),
        judge=win_rates[0].judge,
    )


# -- gate_requests ---------------------------------------------------------------------------------
# Failed requests in the gate, pure. A failed request (no answer after every retry) scores as a wrong answer,
# on both sides alike, so two endpoints that both fail everything score the same and look like no regression.
# A side whose failed share is past the policy's maxFailedShare fails the check, and one that answered none of
# its requests fails it whatever the bound; `modelgate eval` exits with its own code for the latter
# (silent_sides).


Side = Literal["candidate", "incumbent"]
SIDES: tuple[Side, ...] = ("candidate", "incumbent")
MESSAGE = 1024
# Shares are quotients of integers: a share equal to its bound must not fail on rounding.
TOLERANCE = 1e-9


def side_requests(requests: Requests, side: Side) -> SideRequests:
    return requests.candidate if side == "candidate" else requests.incumbent


def silent_sides(requests: Requests | None) -> list[Side]:
    """The sides that were asked and answered none of their requests."""
    if requests is None:
        return []
    return [side for side in SIDES if _silent(side_requests(requests, side))]


def _silent(counts: SideRequests) -> bool:
    return counts.asked > 0 and counts.answered == 0


def failed_share(counts: SideRequests) -> float:
    return counts.failed / counts.asked if counts.asked else 0.0


def silence_text(side: Side, counts: SideRequests) -> str:
    """Names a side that answered nothing, with its count."""
    return f"the {side} answered none of its {counts.asked} requests"


def failures_text(requests: Requests) -> str | None:
    """Each side's failed requests, where any failed; None when none did."""
    parts = [
        f"{side} {counts.failed} of {counts.asked}"
        for side in SIDES
        if (counts := side_requests(requests, side)).failed
    ]
    return f"failed requests: {', '.join(parts)}" if parts else None


def judge_requests(result: GateResult, policy: CheckPolicy) -> RequestsVerdict | None:
    """Both sides' counts against the policy's maxFailedShare; None when the result has none."""
    requests = result.requests
    if requests is None:
        return None
    bound = policy.max_failed_share
    sides = {side: side_requests(requests, side) for side in SIDES}
    problems = [
        _problem(side, counts, bound)
        for side, counts in sides.items()
        if _silent(counts) or failed_share(counts) > bound + TOLERANCE
    ]
    if problems:
        verdict, message = Verdict.FAIL, "requests: " + "; ".join(problems)
    else:
        counted = ", ".join(f"{side} answered {c.answered} of {c.asked}" for side, c in sides.items())
        verdict, message = Verdict.PASS, f"requests: {counted}; within maxFailedShare {bound:g}"
    return RequestsVerdict(
        candidate=_counts(requests.candidate),
        incumbent=_counts(requests.incumbent),
        capabilities=tuple(
            CapabilityRequestCounts(
                name=entry.name, candidate=_counts(entry.candidate), incumbent=_counts(entry.incumbent)
            )
            for entry in requests.capabilities
        ),
        max_failed_share=bound,
        verdict=verdict,
        message=clip(message, MESSAGE),
    )


def _problem(side: Side, counts: SideRequests, bound: float) -> str:
    if _silent(counts):
        return silence_text(side, counts)
    return (
        f"the {side} failed {counts.failed} of {counts.asked} requests ({failed_share(counts):.3g}), "
        f"more than maxFailedShare {bound:g}"
    )


def _counts(counts: SideRequests) -> SideRequestCounts:
    return SideRequestCounts(asked=counts.asked, answered=counts.answered, failed=counts.failed)


# -- win_rate --------------------------------------------------------------------------------------
# The lower confidence bound of a blind pairwise win rate, ties counted as half a win.


def win_share(wins: int, ties: int, losses: int) -> float:
    total = wins + ties + losses
    if total == 0:
        raise ValueError("a win rate needs at least one comparison")
    return (wins + ties / 2) / total


def wilson_lower_bound(wins: int, ties: int, losses: int, confidence: float) -> float:
    """Wilson's score interval's lower end for the share of wins, at a two-sided `confidence`: unlike
    the normal approximation it stays inside [0, 1] and is honest at small samples."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    n = wins + ties + losses
    share = win_share(wins, ties, losses)
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    centre = share + z * z / (2 * n)
    margin = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n))
    return max(0.0, (centre - margin) / (1 + z * z / n))
