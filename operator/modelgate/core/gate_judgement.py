"""The evaluation gate's judgement, pure: a check's result against its policy (each score, the win
rate's lower bound, the test set's age), the check's verdict, and the gate's decision from all checks.

Too few samples, a missing score or a missing date is Inconclusive, never a pass.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from modelgate.api import Verdict
from modelgate.api.duration import parse_duration
from modelgate.api.gate import CheckPolicy, GateCheck, GateSpec
from modelgate.api.gate_result import NO_TOKENS, CapabilityTokens, GateResult, Score, SideTokens, WinRate
from modelgate.api.gate_status import (
    CapabilityTokensPerTask,
    CheckState,
    CheckStatus,
    GateDecision,
    ScoreVerdict,
    TestSetVersion,
    TokensPerTask,
    WinRateVerdict,
)
from modelgate.core.gate_scores import judge_requests, wilson_lower_bound, win_share
from modelgate.core.reasons import clip

# -- gate_judgement --------------------------------------------------------------------------------


MESSAGE = 1024  # the length the status schema allows each verdict's message
# Scores are decimals read from JSON: a drop equal to the tolerance must not fail on rounding.
TOLERANCE = 1e-9


@dataclass(frozen=True)
class CheckRunning:
    """The check's Job has not ended; `message` says what it is doing."""

    message: str


@dataclass(frozen=True)
class CheckMeasured:
    """The check ended and wrote a valid result; `results_urls`: where its Pods (one, or each shard
    of a parallel check) kept the full results, when the gate keeps them."""

    result: GateResult
    results_urls: tuple[str, ...] = ()


@dataclass(frozen=True)
class CheckFailed:
    """The check could not measure: its Job failed or timed out, its container cannot start, or it
    wrote no valid result; `message` says which, naming the field of a malformed result."""

    message: str


CheckObservation = CheckRunning | CheckMeasured | CheckFailed


def job_name(rollout: str, uid: str, run: str, check: str) -> str:
    """The check's Job's name, the same for the same run of the same rollout's gate, so that a
    restarted operator finds the Job instead of starting it again; at most 63 characters (the Job
    controller labels its Pods with it)."""
    digest = hashlib.sha256(f"{uid}/{run}/{check}".encode()).hexdigest()[:8]
    return f"{rollout[:20].rstrip('-.')}-{check[:32].rstrip('-')}-{digest}"


def run_id(generation: int, now: datetime) -> str:
    """Names one run of the gate: a retry or a new spec runs the checks again under another."""
    return f"{generation}-{now.strftime('%Y%m%dT%H%M%S')}"


def _number(value: float) -> str:
    return f"{value:.4g}"


def judge_score(score: Score, policy: CheckPolicy) -> ScoreVerdict:
    bounds = policy.bounds(score.name, lower_is_better=score.lower_is_better)
    message = f"{score.name}: {_number(score.candidate)}"
    worse_by = None
    if score.incumbent is not None:
        message += f" (incumbent {_number(score.incumbent)})"
        difference = score.candidate - score.incumbent
        worse_by = difference if score.lower_is_better else -difference
    verdict = Verdict.FAIL
    if score.samples < policy.min_samples:
        verdict = Verdict.INCONCLUSIVE
        message += f" on {score.samples} samples, fewer than the {policy.min_samples} the policy asks"
    elif bounds.min is not None and score.candidate < bounds.min - TOLERANCE:
        message += f" is below the minimum {_number(bounds.min)}"
    elif bounds.max is not None and score.candidate > bounds.max + TOLERANCE:
        message += f" is above the maximum {_number(bounds.max)}"
    elif bounds.max_drop is not None and worse_by is not None and worse_by > bounds.max_drop + TOLERANCE:
        message += f" is worse by {_number(worse_by)}, past the tolerance {_number(bounds.max_drop)}"
    else:
        verdict = Verdict.PASS
        message += " is within the policy"
    return ScoreVerdict(
        name=score.name,
        candidate=score.candidate,
        incumbent=score.incumbent,
        samples=score.samples,
        lower_is_better=score.lower_is_better,
        min=bounds.min,
        max=bounds.max,
        max_drop=bounds.max_drop,
        verdict=verdict,
        message=clip(message, MESSAGE),
    )


def judge_win_rate(win_rate: WinRate, policy: CheckPolicy) -> WinRateVerdict | None:
    """None when the policy asks nothing of a win rate."""
    wanted = policy.win_rate
    if wanted is None:
        return None
    counts = (win_rate.wins, win_rate.ties, win_rate.losses)
    n = win_rate.samples
    share = win_share(*counts) if n else 0.0
    bound = wilson_lower_bound(*counts, wanted.confidence) if n else 0.0
    message = (
        f"win rate: {_number(share)} over {n} comparisons ({win_rate.wins} won, {win_rate.ties} tied, "
        f"{win_rate.losses} lost), lower bound {_number(bound)} at {_number(wanted.confidence)} confidence"
    )
    if n < policy.min_samples:
        verdict = Verdict.INCONCLUSIVE
        message += f"; fewer comparisons than the {policy.min_samples} the policy asks"
    elif bound < wanted.min_lower_bound - TOLERANCE:
        verdict = Verdict.FAIL
        message += f", below the minimum {_number(wanted.min_lower_bound)}"
    else:
        verdict = Verdict.PASS
        message += f", at least the minimum {_number(wanted.min_lower_bound)}"
    return WinRateVerdict(
        wins=win_rate.wins,
        ties=win_rate.ties,
        losses=win_rate.losses,
        share=share,
        lower_bound=bound,
        confidence=wanted.confidence,
        min_lower_bound=wanted.min_lower_bound,
        verdict=verdict,
        message=clip(message, MESSAGE),
    )


def _staleness(result: GateResult, policy: CheckPolicy, now: datetime) -> tuple[Verdict, str] | None:
    """The test set's age against maxTestSetAge; None when the policy sets no maximum."""
    max_age = policy.max_test_set_age
    if max_age is None:
        return None
    if result.test_set is None:
        return (
            Verdict.INCONCLUSIVE,
            f"the result names no test set, so its age (maxTestSetAge {max_age}) is unknown",
        )
    test_set = result.test_set
    age = now - test_set.date
    named = f"test set {test_set.name} version {test_set.version} of {test_set.date.isoformat()}"
    if age > parse_duration(max_age):
        days = age.total_seconds() / 86400
        return Verdict.FAIL, f"{named} is stale: {days:.1f} days old, older than maxTestSetAge {max_age}"
    return Verdict.PASS, f"{named} is within maxTestSetAge {max_age}"


def _combined(verdicts: list[Verdict]) -> Verdict:
    if Verdict.FAIL in verdicts:
        return Verdict.FAIL
    if Verdict.INCONCLUSIVE in verdicts or not verdicts:
        return Verdict.INCONCLUSIVE
    return Verdict.PASS


def judge_result(
    check: GateCheck,
    status: CheckStatus,
    result: GateResult,
    now: datetime,
    results_urls: tuple[str, ...] = (),
) -> CheckStatus:
    """A measured check: both sides' failed requests, each score and the win rate against the
    policy, the test set's age; the check fails when any of them fails, is Inconclusive when any is
    (or when it measured nothing), and passes otherwise. Its message names what decided it, the
    failed requests first (they make the scores meaningless)."""
    policy = check.policy
    requests = judge_requests(result, policy)
    scores = tuple(judge_score(score, policy) for score in result.scores)
    win_rate = None if result.win_rate is None else judge_win_rate(result.win_rate, policy)
    findings: list[tuple[Verdict, str]] = [(s.verdict, s.message) for s in scores]
    if win_rate is not None:
        findings.append((win_rate.verdict, win_rate.message))
    elif policy.win_rate is not None:
        findings.append((Verdict.INCONCLUSIVE, "the policy asks for a win rate and the result has none"))
    measured = {score.name for score in result.scores}
    findings += [
        (Verdict.INCONCLUSIVE, f"{name}: required by the policy, missing from the result")
        for name in policy.required_scores
        if name not in measured
    ]
    if staleness := _staleness(result, policy, now):
        findings.append(staleness)
    tokens = judge_tokens(result, policy)
    findings += tokens.findings
    if not findings:
        findings.append((Verdict.INCONCLUSIVE, "the result has no scores and no win rate"))
    if requests is not None:
        findings.insert(0, (requests.verdict, requests.message))
    verdict = _combined([v for v, _ in findings])
    decisive = [text for v, text in findings if v is verdict] if verdict is not Verdict.PASS else []
    message = f"{verdict}: " + ("; ".join(decisive) if decisive else "every score is within the policy")
    test_set = result.test_set
    return status.model_copy(
        update={
            "state": CheckState.MEASURED,
            "verdict": verdict,
            "message": clip(message, MESSAGE),
            "test_set": None
            if test_set is None
            else TestSetVersion(name=test_set.name, version=test_set.version, date=test_set.date),
            "scores": scores,
            "win_rate": win_rate,
            "requests": requests,
            "tokens": tokens.per_capability,
            "overall_tokens": tokens.overall,
            "summary": result.summary,
            "results_urls": results_urls,
            "finished_at": now,
        }
    )


def judge_failure(check: GateCheck, status: CheckStatus, problem: str, now: datetime) -> CheckStatus:
    """A check that could not measure is what its onError says: a failure (Reject) or Inconclusive."""
    verdict = Verdict.FAIL if check.on_error == "Reject" else Verdict.INCONCLUSIVE
    message = f"{verdict} (onError {check.on_error}): {problem}"
    return status.model_copy(
        update={
            "state": CheckState.ERROR,
            "verdict": verdict,
            "message": clip(message, MESSAGE),
            "finished_at": now,
        }
    )


def observe_check(
    check: GateCheck, status: CheckStatus, seen: CheckObservation | None, now: datetime
) -> CheckStatus:
    """The check's status after what was seen of its Job (None: nothing new)."""
    if status.verdict is not None or seen is None:
        return status
    if isinstance(seen, CheckMeasured):
        return judge_result(check, status, seen.result, now, seen.results_urls)
    if isinstance(seen, CheckFailed):
        return judge_failure(check, status, seen.message, now)
    return status.model_copy(update={"message": clip(seen.message, MESSAGE)})


@dataclass(frozen=True)
class GateOutcome:
    decision: GateDecision
    message: str


def decide_gate(spec: GateSpec, checks: tuple[CheckStatus, ...]) -> GateOutcome | None:
    """The decision once every check has a verdict (None before): any failed check rejects; an
    Inconclusive one makes a canary at most (or rejects, with `inconclusive: Reject`); all passing
    is a full release where `full.allowed`, else a canary."""
    if any(check.verdict is None for check in checks):
        return None
    failed = [check for check in checks if check.verdict is Verdict.FAIL]
    inconclusive = [check for check in checks if check.verdict is Verdict.INCONCLUSIVE]
    if failed:
        reasons = "; ".join(f"check {c.name}: {c.message}" for c in failed)
        return GateOutcome(GateDecision.REJECT, reasons)
    if inconclusive:
        reasons = "; ".join(f"check {c.name}: {c.message}" for c in inconclusive)
        if spec.inconclusive == "Reject":
            return GateOutcome(GateDecision.REJECT, f"{reasons} (spec.gate.inconclusive is Reject)")
        return GateOutcome(GateDecision.CANARY, f"a canary at most: {reasons}")
    names = ", ".join(c.name for c in checks)
    if spec.full.allowed:
        return GateOutcome(GateDecision.FULL, f"every check passed ({names}); a full release is allowed")
    return GateOutcome(GateDecision.CANARY, f"every check passed ({names}); spec.gate.full.allowed is false")


# -- gate_tokens -----------------------------------------------------------------------------------
# Tokens per task in the gate, pure: both sides' mean output tokens per capability and over all of them, from
# a result's sums and counts, and the policy's bounds on the candidate's ratio to the incumbent's. A missing
# or incomplete count is Inconclusive, never a pass (nor a count of 0).


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
