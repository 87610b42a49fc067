"""The GateResult `modelgate eval` writes, its one-line summary, and its size limit. Pure."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from modelgate.api.gate_result import (
    NO_TOKENS,
    TERMINATION_MESSAGE_LIMIT,
    CapabilityTokens,
    GateResult,
    Requests,
    Score,
    SideTokens,
    TestSetIdentity,
    WinRate,
)
from modelgate.api.gate_shard import ShardResult
from modelgate.core.gate_judgement import totals
from modelgate.core.gate_scores import failures_text, wilson_lower_bound, win_share
from modelgate.evaluator.storage_failure import StorageFailure

# The confidence of the lower bound shown to people; the operator applies the policy's own.
SHOWN_CONFIDENCE = 0.95
SUMMARY_LIMIT = 1024
# Neither better nor worse when higher: a policy may still bound how far it moves.
NEUTRAL_SCORES = frozenset({"replay-mean-answer-chars"})


_NO_TOKENS_JSON = NO_TOKENS.model_dump(mode="json")


class ResultTooLarge(ValueError):
    """More scores than a termination message holds."""


def gate_result(
    test_set: TestSetIdentity | None,
    scores: Sequence[Score],
    win_rate: WinRate | None,
    *,
    replayed: int,
    tokens: Sequence[CapabilityTokens] = (),
    requests: Requests | None = None,
) -> GateResult:
    summary = summary_line(test_set, scores, win_rate, replayed=replayed)
    failed = None if requests is None else failures_text(requests)
    for part in ([failed] if failed else []) + ([tokens_text(tokens)] if tokens else []):
        summary = _cut(f"{summary}; {part}")
    return GateResult(
        test_set=test_set,
        scores=tuple(scores),
        win_rate=win_rate,
        summary=summary,
        tokens=tuple(tokens),
        requests=requests,
    )


def tokens_text(tokens: Sequence[CapabilityTokens]) -> str:
    """Both sides' output tokens per task over every capability, and how many answers had no count."""
    candidate, incumbent = totals(tokens)
    return (
        f"output tokens per task: candidate {per_task_text(candidate)}, incumbent {per_task_text(incumbent)}"
    )


def per_task_text(side: SideTokens) -> str:
    mean = "unknown" if side.per_task is None else f"{side.per_task:.1f}"
    return mean if not side.uncounted else f"{mean} ({side.uncounted} answers without a count)"


def failure_result(problem: Exception) -> GateResult:
    """What a run that could not measure leaves for the operator to show."""
    failed = problem.data if isinstance(problem, StorageFailure) else None
    return GateResult(summary=_cut(f"could not measure: {problem}"), storage_failure=failed)


def summary_line(
    test_set: TestSetIdentity | None, scores: Sequence[Score], win_rate: WinRate | None, *, replayed: int
) -> str:
    parts = []
    if test_set is not None:
        capabilities = [s for s in scores if not s.name.startswith("replay-")]
        items = sum(s.samples for s in capabilities)
        parts.append(
            f"test set {test_set.name} {test_set.version}: {len(capabilities)} capabilities, {items} items"
        )
    if replayed:
        parts.append(f"replay: {replayed} requests")
    if win_rate is not None:
        parts.append(f"judge: {win_rate_text(win_rate)}")
    worse = [s.name for s in scores if is_worse(s)]
    parts.append(f"candidate worse on: {', '.join(worse)}" if worse else "candidate worse on nothing")
    return _cut("; ".join(parts))


def win_rate_text(win_rate: WinRate) -> str:
    counts = f"{win_rate.wins} wins, {win_rate.ties} ties, {win_rate.losses} losses"
    if win_rate.samples == 0:
        return f"{counts} (nothing judged)"
    share = win_share(win_rate.wins, win_rate.ties, win_rate.losses)
    bound = wilson_lower_bound(win_rate.wins, win_rate.ties, win_rate.losses, SHOWN_CONFIDENCE)
    return f"{counts}, win share {share:.3f}, {SHOWN_CONFIDENCE:.0%} lower bound {bound:.3f}"


def is_worse(score: Score) -> bool:
    if score.incumbent is None or score.name in NEUTRAL_SCORES:
        return False
    return score.candidate > score.incumbent if score.lower_is_better else score.candidate < score.incumbent


def result_json(result: GateResult, limit: int = TERMINATION_MESSAGE_LIMIT) -> str:
    """Compact JSON of the result, within `limit` bytes: without its summary line if that is what it
    takes, then without its requests per capability (their totals stay: the operator judges them),
    then without its token counts (all of them, never some: a policy that bounds tokens is then
    Inconclusive), as the scores are what the operator judges first; else ResultTooLarge."""
    text = _terse(result)
    requests = result.requests
    no_summary: dict[str, Any] = {"summary": None}
    totals_only = {**no_summary, "requests": requests and requests.model_copy(update={"capabilities": ()})}
    for given_up in (no_summary, totals_only, {**totals_only, "tokens": ()}):
        if len(text.encode()) <= limit:
            break
        text = _terse(result.model_copy(update=given_up))
    if len(text.encode()) > limit:
        raise ResultTooLarge(
            f"the result is {len(text.encode())} bytes with {len(result.scores)} scores, more than the "
            f"{limit} a termination message holds: split the test set's capabilities across checks"
        )
    return text


def shard_json(shard: ShardResult, limit: int = TERMINATION_MESSAGE_LIMIT) -> str:
    """Compact JSON of a shard's counts, within `limit` bytes: without its token counts (all of
    them, marked left out) if that is what it takes, else ResultTooLarge."""
    text = _shard_text(shard)
    if len(text.encode()) > limit:
        text = _shard_text(shard.model_copy(update={"tokens_left_out": True}))
    if len(text.encode()) > limit:
        raise ResultTooLarge(
            f"the shard's counts are {len(text.encode())} bytes, more than the {limit} a termination "
            "message holds: fewer capabilities per check, or a smaller replay sample"
        )
    return text


def _shard_text(shard: ShardResult) -> str:
    document = shard.model_dump(mode="json", by_alias=True, exclude_none=True)
    for counts in document.get("capabilities", []):
        for failed in ("candidateFailed", "incumbentFailed"):
            if not counts[failed]:
                del counts[failed]  # 0 is the default
        for side in ("candidateTokens", "incumbentTokens"):
            if shard.tokens_left_out or counts[side] == _NO_TOKENS_JSON:
                del counts[side]  # the default
            else:
                _drop_zero_uncounted(counts[side])
    if not shard.tokens_left_out:
        del document["tokensLeftOut"]  # false is the default
    return json.dumps(document, separators=(",", ":"))


def _terse(result: GateResult) -> str:
    document: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    for score in document.get("scores", []):
        if not score["lowerIsBetter"]:
            del score["lowerIsBetter"]  # false is the default
    for entry in document.get("tokens", []):
        _drop_zero_uncounted(entry["candidate"], entry["incumbent"])
    if "requests" in document and not document["requests"]["capabilities"]:
        del document["requests"]["capabilities"]  # () is the default
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


def _drop_zero_uncounted(*sides: dict[str, Any]) -> None:
    for side in sides:
        if not side["uncounted"]:
            del side["uncounted"]  # 0 is the default


def _cut(text: str) -> str:
    return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 1] + "…"
