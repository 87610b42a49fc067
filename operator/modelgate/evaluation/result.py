"""The GateResult `modelgate eval` writes, its one-line summary, and its size limit. Pure."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from modelgate.api.gate_result import TERMINATION_MESSAGE_LIMIT, GateResult, Score, TestSetIdentity, WinRate
from modelgate.api.gate_shard import ShardResult
from modelgate.core.win_rate import wilson_lower_bound, win_share
from modelgate.evaluation.storage_failure import StorageFailure

# The confidence of the lower bound shown to people; the operator applies the policy's own.
SHOWN_CONFIDENCE = 0.95
SUMMARY_LIMIT = 1024
# Neither better nor worse when higher: a policy may still bound how far it moves.
NEUTRAL_SCORES = frozenset({"replay-mean-answer-chars"})


class ResultTooLarge(ValueError):
    """More scores than a termination message holds."""


def gate_result(
    test_set: TestSetIdentity | None, scores: Sequence[Score], win_rate: WinRate | None, *, replayed: int
) -> GateResult:
    return GateResult(
        test_set=test_set,
        scores=tuple(scores),
        win_rate=win_rate,
        summary=summary_line(test_set, scores, win_rate, replayed=replayed),
    )


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
    takes (the scores are what the operator judges), else ResultTooLarge."""
    text = _terse(result)
    if len(text.encode()) > limit and result.summary is not None:
        text = _terse(result.model_copy(update={"summary": None}))
    if len(text.encode()) > limit:
        raise ResultTooLarge(
            f"the result is {len(text.encode())} bytes with {len(result.scores)} scores, more than the "
            f"{limit} a termination message holds: split the test set's capabilities across checks"
        )
    return text


def shard_json(shard: ShardResult, limit: int = TERMINATION_MESSAGE_LIMIT) -> str:
    """Compact JSON of a shard's counts, within `limit` bytes, else ResultTooLarge."""
    text = json.dumps(shard.model_dump(mode="json", by_alias=True, exclude_none=True), separators=(",", ":"))
    if len(text.encode()) > limit:
        raise ResultTooLarge(
            f"the shard's counts are {len(text.encode())} bytes, more than the {limit} a termination "
            "message holds: fewer capabilities per check, or a smaller replay sample"
        )
    return text


def _terse(result: GateResult) -> str:
    document: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    for score in document.get("scores", []):
        if not score["lowerIsBetter"]:
            del score["lowerIsBetter"]  # false is the default
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False)


def _cut(text: str) -> str:
    return text if len(text) <= SUMMARY_LIMIT else text[: SUMMARY_LIMIT - 1] + "…"
