"""Tokens per task in the gate, pure: both sides' mean output tokens per capability and over all of
them, from a result's sums and counts, and the policy's bounds on the candidate's ratio to the
incumbent's. A missing or incomplete count is Inconclusive, never a pass (nor a count of 0)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from modelgate.api import Verdict
from modelgate.api.gate import CheckPolicy
from modelgate.api.gate_result import NO_TOKENS, CapabilityTokens, GateResult, SideTokens
from modelgate.api.gate_status import CapabilityTokensPerTask, TokensPerTask
from modelgate.core.limits import clip

MESSAGE = 1024
# Means are quotients of integers: a ratio equal to its bound must not fail on rounding.
TOLERANCE = 1e-9
EVERY_CAPABILITY = "every capability"


@dataclass(frozen=True)
class TokensJudged:
    per_capability: tuple[CapabilityTokensPerTask, ...]
    overall: TokensPerTask | None
    findings: tuple[tuple[Verdict, str], ...]  # the verdicts of the policy's bounds, with why


def judge_tokens(result: GateResult, policy: CheckPolicy) -> TokensJudged:
    bounds = {bound.name: bound.max for bound in policy.capability_tokens_ratios}
    per_capability = tuple(
        CapabilityTokensPerTask(
            name=entry.name,
            **_judged(
                entry.name, entry.candidate, entry.incumbent, bounds.get(entry.name), policy.min_samples
            ).model_dump(),
        )
        for entry in result.tokens
    )
    overall = None
    if result.tokens:
        candidate, incumbent = totals(result.tokens)
        overall = _judged(EVERY_CAPABILITY, candidate, incumbent, policy.max_tokens_ratio, policy.min_samples)
    findings = [(t.verdict, t.message or "") for t in (*per_capability, overall) if t and t.verdict]
    measured = {entry.name for entry in result.tokens}
    missing = [name for name in bounds if name not in measured]
    if policy.max_tokens_ratio is not None and not result.tokens:
        missing.insert(0, EVERY_CAPABILITY)
    findings += [
        (Verdict.INCONCLUSIVE, f"tokens per task of {name}: bounded by the policy, missing from the result")
        for name in missing
    ]
    return TokensJudged(per_capability, overall, tuple(findings))


def totals(tokens: Sequence[CapabilityTokens]) -> tuple[SideTokens, SideTokens]:
    """The candidate's and the incumbent's counts over every capability."""
    candidate = sum((entry.candidate for entry in tokens), NO_TOKENS)
    incumbent = sum((entry.incumbent for entry in tokens), NO_TOKENS)
    return candidate, incumbent


def _judged(
    name: str, candidate: SideTokens, incumbent: SideTokens, max_ratio: float | None, min_samples: int
) -> TokensPerTask:
    """Both means, their ratio, and its verdict where it is bounded."""
    mine, theirs = candidate.per_task, incumbent.per_task
    ratio = None if mine is None or not theirs else mine / theirs
    verdict = message = None
    if max_ratio is not None:
        verdict, why = _verdict(candidate, incumbent, ratio, max_ratio, min_samples)
        means = f"candidate {_mean(mine)}, incumbent {_mean(theirs)}"
        message = clip(f"tokens per task of {name}: {means}: {why}", MESSAGE)
    return TokensPerTask(
        candidate=mine,
        incumbent=theirs,
        candidate_counted=candidate.counted,
        incumbent_counted=incumbent.counted,
        uncounted=candidate.uncounted + incumbent.uncounted,
        ratio=ratio,
        max_ratio=max_ratio,
        verdict=verdict,
        message=message,
    )


def _verdict(
    candidate: SideTokens, incumbent: SideTokens, ratio: float | None, max_ratio: float, min_samples: int
) -> tuple[Verdict, str]:
    uncounted = candidate.uncounted + incumbent.uncounted
    if uncounted:
        return Verdict.INCONCLUSIVE, f"{uncounted} answers came without a token count"
    counted = min(candidate.counted, incumbent.counted)
    if counted < min_samples:
        return (
            Verdict.INCONCLUSIVE,
            f"{counted} answers counted, fewer than the {min_samples} the policy asks",
        )
    if ratio is None:  # the incumbent's answers took no tokens at all
        if candidate.tokens:
            return Verdict.FAIL, "the incumbent's answers took no tokens and the candidate's did"
        return Verdict.PASS, "neither side's answers took tokens"
    if ratio > max_ratio + TOLERANCE:
        return Verdict.FAIL, f"the ratio {ratio:.3g} is above the maximum {max_ratio:g}"
    return Verdict.PASS, f"the ratio {ratio:.3g} is within the maximum {max_ratio:g}"


def _mean(per_task: float | None) -> str:
    return "unknown" if per_task is None else f"{per_task:.4g}"
