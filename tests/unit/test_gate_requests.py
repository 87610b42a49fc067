"""Failed requests in the gate (core/gate_scores.py, through core/gate_judgement.py): a side's
failed share against the policy's maxFailedShare at its edges, a side that answered nothing failing
whatever the bound, and a gate whose checks measured only failures never releasing the candidate."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from modelgate.api import Verdict
from modelgate.api.gate import DEFAULT_MAX_FAILED_SHARE, CheckPolicy, GateCheck, GateSpec
from modelgate.api.gate_result import CapabilityRequests, GateResult, Requests, Score, SideRequests
from modelgate.api.gate_status import CheckState, CheckStatus, GateDecision
from modelgate.core.gate_judgement import decide_gate, judge_result
from modelgate.core.gate_scores import judge_requests, silent_sides
from modelgate.evaluator.result import result_json

NOW = datetime(2026, 12, 1, tzinfo=UTC)
FINE = SideRequests(asked=40, answered=40)


def requests(candidate: SideRequests, incumbent: SideRequests = FINE) -> Requests:
    return Requests(candidate=candidate, incumbent=incumbent)


def failing(asked: int, failed: int) -> SideRequests:
    return SideRequests(asked=asked, answered=asked - failed)


def with_requests(counted: Requests | None, *scores: Score) -> GateResult:
    return GateResult(scores=scores, requests=counted)


def quality(**policy: Any) -> GateCheck:
    return GateCheck.model_validate(
        {"name": "quality", "job": {"image": "check:1"}, "policy": {"minSamples": 20, **policy}}
    )


def judged(result: GateResult, check: GateCheck) -> CheckStatus:
    running = CheckStatus(name=check.name, job="chat-quality-0", state=CheckState.RUNNING)
    return judge_result(check, running, result, NOW)


@pytest.mark.parametrize(
    ("asked", "failed", "bound", "verdict"),
    [
        (40, 0, 0.0, Verdict.PASS),  # no failures pass even the strictest bound
        (40, 1, 0.0, Verdict.FAIL),
        (20, 1, 0.05, Verdict.PASS),  # exactly at the bound passes
        (100, 5, 0.05, Verdict.PASS),
        (20, 2, 0.05, Verdict.FAIL),  # past it fails
        (101, 6, 0.05, Verdict.FAIL),  # 0.0594
        (40, 39, 1.0, Verdict.PASS),  # 1 judges by the scores alone...
        (40, 40, 1.0, Verdict.FAIL),  # ...but a side that answered nothing fails whatever the bound
        (0, 0, 0.0, Verdict.PASS),  # nothing asked, nothing failed
    ],
)
def test_a_sides_failed_share_against_the_bound(
    asked: int, failed: int, bound: float, verdict: Verdict
) -> None:
    counted = requests(failing(asked, failed))
    policy = CheckPolicy(max_failed_share=bound)

    judgement = judge_requests(with_requests(counted), policy)

    assert judgement is not None and judgement.verdict is verdict
    assert (judgement.candidate.asked, judgement.candidate.failed) == (asked, failed)
    assert judgement.max_failed_share == bound


def test_the_default_bound_is_documented_and_within_the_schema() -> None:
    assert CheckPolicy().max_failed_share == DEFAULT_MAX_FAILED_SHARE == 0.05
    schema = CheckPolicy.model_json_schema(by_alias=True)["properties"]["maxFailedShare"]
    assert (schema["minimum"], schema["maximum"], schema["default"]) == (0, 1, 0.05)
    assert "0.05" in schema["description"]


def test_the_failing_checks_message_names_the_side_and_its_counts() -> None:
    counted = requests(failing(40, 3))
    status = judged(
        with_requests(counted, Score(name="math", candidate=0.9, incumbent=0.8, samples=40)), quality()
    )

    assert status.verdict is Verdict.FAIL
    assert status.requests is not None and status.requests.verdict is Verdict.FAIL
    assert (status.requests.candidate.failed, status.requests.incumbent.failed) == (3, 0)
    message = status.message or ""
    assert "candidate" in message and "3 of 40" in message
    assert "incumbent" not in message  # it failed nothing


def test_both_sides_failing_every_request_rejects_even_where_a_canary_or_full_release_would_follow() -> None:
    """The measured bug: two wrong URLs scored 0 against 0, worse on nothing; the check passed."""
    silent = SideRequests(asked=25, answered=0)
    counted = Requests(
        candidate=silent,
        incumbent=silent,
        capabilities=(CapabilityRequests(name="math", candidate=silent, incumbent=silent),),
    )
    result = with_requests(counted, Score(name="math", candidate=0.0, incumbent=0.0, samples=25))
    # A policy that judges only drops, and lets everything through but the requests: still a failure.
    check = quality(maxDrop=0.05, maxFailedShare=1)

    status = judged(result, check)

    assert silent_sides(counted) == ["candidate", "incumbent"]
    assert status.verdict is Verdict.FAIL
    assert status.scores[0].verdict is Verdict.PASS  # 0 against 0 is no drop: the scores alone pass
    for spec in ({"full": {"allowed": True}}, {"inconclusive": "Canary"}):
        gate = GateSpec.model_validate({"checks": [check.model_dump(by_alias=True)], **spec})
        outcome = decide_gate(gate, (status,))
        assert outcome is not None and outcome.decision is GateDecision.REJECT


def test_a_result_without_request_counts_is_judged_by_its_scores() -> None:
    status = judged(
        with_requests(None, Score(name="math", candidate=0.9, incumbent=0.8, samples=40)), quality()
    )

    assert status.verdict is Verdict.PASS and status.requests is None


def test_request_counts_alone_measure_nothing() -> None:
    status = judged(with_requests(requests(FINE)), quality())

    assert status.verdict is Verdict.INCONCLUSIVE
    assert status.requests is not None and status.requests.verdict is Verdict.PASS


def test_a_result_too_large_keeps_its_request_totals_and_gives_up_their_capabilities() -> None:
    names = [f"capability-with-a-long-name-{n:03d}" for n in range(25)]
    scores = tuple(Score(name=name, candidate=0.9, incumbent=0.8, samples=40) for name in names)
    counted = Requests(
        candidate=failing(1000, 3),
        incumbent=FINE.model_copy(update={"asked": 1000, "answered": 1000}),
        capabilities=tuple(CapabilityRequests(name=name, candidate=FINE, incumbent=FINE) for name in names),
    )
    result = GateResult(scores=scores, requests=counted)
    assert len(result.model_dump_json(by_alias=True, exclude_none=True)) > 4096

    read = GateResult.model_validate_json(result_json(result))

    assert read.scores == scores
    assert read.requests == counted.model_copy(update={"capabilities": ()})


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"candidate": {"asked": 3, "answered": 4}, "incumbent": {"asked": 0, "answered": 0}}, "answered"),
        (
            {
                "candidate": {"asked": 3, "answered": 3},
                "incumbent": {"asked": 3, "answered": 3},
                "capabilities": [
                    {
                        "name": "math",
                        "candidate": {"asked": 4, "answered": 4},
                        "incumbent": {"asked": 3, "answered": 3},
                    }
                ],
            },
            "candidate",
        ),
    ],
)
def test_counts_that_cannot_be_are_refused_naming_them(document: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=field):
        GateResult.model_validate({"requests": document})
