"""Failed requests in the gate, pure. A failed request (no answer after every retry) scores as a
wrong answer, on both sides alike, so two endpoints that both fail everything score the same and
look like no regression. A side whose failed share is past the policy's maxFailedShare fails the
check, and one that answered none of its requests fails it whatever the bound; `modelgate eval`
exits with its own code for the latter (silent_sides)."""

from __future__ import annotations

from typing import Literal

from modelgate.api import Verdict
from modelgate.api.gate import CheckPolicy
from modelgate.api.gate_result import GateResult, Requests, SideRequests
from modelgate.api.gate_status import CapabilityRequestCounts, RequestsVerdict, SideRequestCounts
from modelgate.core.limits import clip

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
