"""Whether the current step is done: its weight (and mirror) live, the candidate Available, its pause
over, and a passing analysis taken at least one interval into the step; and what a new step starts
from. Each unmet need is said in the status message."""

from __future__ import annotations

from dataclasses import dataclass

from modelgate.api import MetricAnalysis, ModelRolloutSpec, ModelRolloutStatus, Verdict
from modelgate.core import capacity
from modelgate.core.moments import moment
from modelgate.core.schedule import pause_ends_at, step_settles_at
from modelgate.core.stage import candidate_served, mirror_wanted
from modelgate.core.tick import TickView


@dataclass(frozen=True)
class Unmet:
    """What keeps the current step from completing; `note`, when set, says so in the status message."""

    note: str | None = None


def unmet_need(tick: TickView) -> Unmet | None:
    """None when the current step is complete."""
    step = tick.step
    if capacity.step_waits(tick):
        return Unmet()  # its weight is not raised yet; the message says why
    if not tick.weights_live:
        mirror = mirror_wanted(tick.spec, tick.status)
        copies = f" and a {mirror}% mirror" if mirror else ""
        return Unmet(f"waiting for weight {tick.status.current_weight}{copies} to be live")
    if not tick.observed.candidate_available:
        # As Flagger halts: no step is finished while the candidate is not Available; its
        # traffic stays as it is, and the metrics decide whether that is a rollback.
        return Unmet(f"holding: the candidate is not Available ({tick.observed.candidate_message})")
    if step.pause is not None or step.mirror is not None:
        ends_at = pause_ends_at(tick.spec, tick.status)
        if ends_at is None:
            return Unmet()  # indefinite: until `modelgate promote`
        if tick.now < ends_at:
            return Unmet(f"{'mirroring' if step.mirror else 'paused'} until {moment(ends_at)}")
    return analysis_unmet(tick)


def analysis_unmet(tick: TickView) -> Unmet | None:
    """None once every metric has a passing run taken at least one interval after the step started."""
    analysis = tick.spec.analysis
    if analysis is None or not candidate_served(tick.spec, tick.status):
        return None
    settled = step_settles_at(tick.spec, tick.status)
    assert settled is not None
    latest = {m.name: m for m in tick.status.analysis}
    for metric in (m for m in analysis.metrics if not m.dry_run):
        record = latest.get(metric.name)
        if record is None or record.time < settled or record.verdict is not Verdict.PASS:
            state = "no analysis yet" if record is None or record.time < settled else record.message
            return Unmet(f"waiting for {metric.name} to pass ({state})")
    return None


def failures_for_new_step(spec: ModelRolloutSpec, status: ModelRolloutStatus) -> tuple[MetricAnalysis, ...]:
    """Metrics whose failureLimit counts per step start the step with no failures."""
    per_step = (
        {m.name for m in spec.analysis.metrics if m.failure_limit_scope == "step"}
        if (spec.analysis)
        else set()
    )
    return tuple(m.model_copy(update={"failures": 0}) if m.name in per_step else m for m in status.analysis)
