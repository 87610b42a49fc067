"""The report's first line: how the rollout ended (or where it is) and why, in one sentence, from
status fields alone."""

from __future__ import annotations

from modelgate.api import ModelRolloutStatus, Phase
from modelgate.api.rollback_reason import BreachRule, RollbackReason
from modelgate.cli.report.units import shown
from modelgate.core.reasons import moment

_BROKE = {
    BreachRule.MAX: "above its maximum",
    BreachRule.MIN: "below its minimum",
    BreachRule.MAX_RATIO: "above its limit (maxRatio times the incumbent's)",
    BreachRule.MAX_INCREASE: "above its limit (the incumbent's plus maxIncrease)",
    BreachRule.MIN_RATIO: "below its limit (minRatio times the incumbent's)",
    BreachRule.SEQUENTIAL: "above its tolerance (the sequential test's confidence bound)",
}


def outcome(status: ModelRolloutStatus, candidate: str, units: dict[str, str]) -> str:
    """E.g. "Rolled back chat-v3: error-rate was 8% at 2026-01-05 09:00:30 UTC, above its maximum
    1% (the incumbent's: 0.1%)." `units` maps a metric's name to its preset's unit."""
    phase = status.phase or Phase.PENDING
    reason = status.rollback_reason
    if phase is Phase.ROLLED_BACK and reason is not None:
        incumbent = reason.incumbent_value
        if incumbent is None:  # a fixed bound: the incumbent is still queried beside it, where it is
            kept = [m.incumbent_value for m in status.analysis if m.name == reason.metric]
            incumbent = kept[0] if kept else None
        return f"Rolled back {candidate}: {_why(reason, incumbent, units.get(reason.metric or '', ''))}"
    if phase is Phase.SUCCEEDED:
        return f"Promoted {candidate}: it takes all the traffic."
    if phase is Phase.FAILED:
        return f"Failed {candidate}: {status.message or 'see the conditions below'}"
    weight = f"{status.current_weight}% of the traffic"
    return f"{phase} {candidate} at step {status.current_step_index}, {weight}: {status.message or ''}"


def _why(reason: RollbackReason, incumbent: float | None, unit: str) -> str:
    if reason.metric is None:  # a deadline, an abort: only the message says which
        return reason.message
    broke = _BROKE.get(reason.rule, "beyond its threshold") if reason.rule else "beyond its threshold"
    sentence = f"{reason.metric} was {shown(reason.value, unit)} at {moment(reason.time)}, {broke}"
    if reason.threshold is not None:
        sentence += f" {shown(reason.threshold, unit)}"
    if incumbent is not None:
        sentence += f" (the incumbent's: {shown(incumbent, unit)})"
    return sentence + "."
