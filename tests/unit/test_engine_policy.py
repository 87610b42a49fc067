"""The rollout's policy is one ordered list (core/policy.py): where two rules apply in one tick, the
earlier decides. Each test sets up two at once and checks which one the status shows."""

from __future__ import annotations

import re
from pathlib import Path

from modelgate.api import ModelRolloutSpec, PauseReason, Phase
from modelgate.core import Reason, policy

from .engine_support import INTERVAL, Outcome, Simulator, event_reasons, make_spec, weight


def _with_deadlines(spec: ModelRolloutSpec, **deadlines: dict[str, str]) -> ModelRolloutSpec:
    document = spec.model_dump(by_alias=True, exclude_none=True)
    document["progressDeadlines"] = deadlines
    return ModelRolloutSpec.model_validate(document)


def _inconclusive_for_a_minute(action: str, **spec_options: object) -> Simulator:
    """A rollout at 20% whose analysis has been Inconclusive just short of its 1m deadline."""
    spec = make_spec(weight(20), weight(100), **spec_options)  # type: ignore[arg-type]
    sim = Simulator(_with_deadlines(spec, inconclusive={"after": "1m", "action": action}))
    sim.start()
    for _ in range(2):
        sim.tick(analysis=Outcome.FEW_REQUESTS, after=INTERVAL)
    assert sim.phase is Phase.PROGRESSING
    return sim


def test_a_breach_past_the_inconclusive_deadline_rolls_back_rather_than_pauses() -> None:
    sim = _inconclusive_for_a_minute("pause")
    decision = sim.tick(analysis=Outcome.FAIL, after=INTERVAL)
    assert (decision.status.phase, decision.status.pause, sim.live_weight) == (Phase.ROLLED_BACK, None, 0)
    assert Reason.PROGRESS_DEADLINE_EXCEEDED not in event_reasons(decision)


def test_the_deadline_acts_once_passed_when_nothing_earlier_applies() -> None:
    sim = _inconclusive_for_a_minute("pause")
    decision = sim.tick(analysis=Outcome.FEW_REQUESTS, after=INTERVAL)
    assert decision.status.pause is not None
    assert (decision.status.phase, decision.status.pause.reason) == (
        Phase.PAUSED,
        PauseReason.INCONCLUSIVE_DEADLINE,
    )


def test_a_pause_on_prometheus_errors_holds_past_the_inconclusive_deadline() -> None:
    sim = _inconclusive_for_a_minute("fail", max_consecutive_errors=1)
    decision = sim.tick(analysis=Outcome.ERROR, after=INTERVAL)
    assert decision.status.pause is not None and decision.status.pause.reason is PauseReason.PROMETHEUS_ERRORS
    decision = sim.tick(analysis=Outcome.FEW_REQUESTS, after=INTERVAL)
    assert decision.status.pause is not None
    assert (decision.status.phase, decision.status.pause.reason, sim.live_weight) == (
        Phase.PAUSED,
        PauseReason.PROMETHEUS_ERRORS,
        20,
    )


def test_an_unavailable_candidate_is_what_a_pending_rollout_says_it_waits_for() -> None:
    sim = Simulator(make_spec(weight(20)), available=False, check_error="connection refused")
    decision = sim.tick()
    assert decision.status.phase is Phase.PENDING
    assert decision.status.message.startswith("waiting for the candidate")
    sim.available = True
    decision = sim.tick(after=INTERVAL)
    assert (decision.status.phase, sim.live_weight) == (Phase.PENDING, 0)
    assert "connection refused" in decision.status.message


def _documented_rules() -> tuple[list[str], list[str]]:
    """The rule names of docs/architecture.md's policy table, column by column."""
    page = (Path(__file__).parents[2] / "docs" / "architecture.md").read_text()
    table = page[page.index("| `Pending` |") :].split("\n\n")[0].splitlines()[2:]
    columns: tuple[list[str], list[str]] = ([], [])
    for row in table:
        for column, cell in zip(columns, row.strip("|").split("|"), strict=True):
            if name := re.match(r"\s*`(\w+)`", cell):
                column.append(name.group(1))
    return columns


def test_the_architecture_page_lists_the_policy_in_the_order_the_engine_evaluates_it() -> None:
    pending, stepping = _documented_rules()
    assert pending == [rule.__name__ for rule in (*policy.PENDING_BOOKKEEPING, *policy.PENDING)]
    assert stepping == [rule.__name__ for rule in (*policy.STEPPING_BOOKKEEPING, *policy.STEPPING)]
