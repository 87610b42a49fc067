"""How a rollout looks in a terminal (shared by `status` and the demo's live view)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from rich.console import Group, RenderableType
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from modelgate.api import (
    FalseRollbackWarning,
    ModelRolloutStatus,
    Phase,
    RollbackReason,
    RouteState,
    parse_status,
)
from modelgate.api.addresses import ALLOW_LOOPBACK_FLAG
from modelgate.api.duration import parse_duration
from modelgate.api.internal_error_status import InternalError
from modelgate.api.pause import RESUMABLE, PauseReason
from modelgate.api.status import short_message
from modelgate.cli.loopback import names_loopback
from modelgate.cli.render.analysis import (
    AnalysisView,
    bounds_text,
    metric_rows,
    number_text,
    quantile_bounds_text,
)
from modelgate.cli.render.analysis_inputs import analysis_input_lines
from modelgate.cli.render.cost import cost_text
from modelgate.cli.render.gate import VERDICT_STYLE, render_gate
from modelgate.cli.render.promql import PromQL
from modelgate.core.reasons import moment

PHASE_STYLE = {
    "Succeeded": "bold green",
    "RolledBack": "bold red",
    "Failed": "bold red",
    "Paused": "yellow",
    "Progressing": "cyan",
    "Pending": "dim",
    "Gating": "cyan",
}


def step_label(step: dict[str, Any]) -> str:
    if "setWeight" in step:
        return f"setWeight {step['setWeight']}"
    if "mirror" in step:
        return f"mirror {step['mirror']['percent']}% for {step['mirror']['duration']}"
    duration = (step.get("pause") or {}).get("duration")
    return f"pause {duration}" if duration else "pause (until promote)"


def side_name(side: dict[str, Any]) -> str:
    """A spec side's workload: its Deployment's name, `pool/<name>` for an InferencePool, or
    `adapter/<name>` for an adapter (both sides' pool is the same)."""
    if side.get("adapter"):
        return f"adapter/{side['adapter']}"
    pool = side.get("inferencePool")
    return f"pool/{pool}" if pool else str(side.get("deployment", "-"))


def render_status(
    body: dict[str, Any], live_weights: tuple[int, int] | str | None = None, now: datetime | None = None
) -> RenderableType:
    """`now`: the time a timed step's time left is counted to (None: not shown)."""
    meta, spec = body["metadata"], body["spec"]
    status = parse_status(body.get("status") or {})
    header = _header(meta, spec, status, live_weights, now)
    parts: list[RenderableType] = [header]
    if status.rollback_reason is not None:
        reason = status.rollback_reason
        parts.append(Text(f"Rolled back: {reason.message}", style="bold red"))
        if reason.rule is not None:
            parts.append(Text(_breach_line(reason)))
        if reason.query:
            parts.append(_labelled("  query:", PromQL(reason.query, style="dim")))
        if reason.pods:
            parts.append(_pods_table(reason.metric or "metric", reason))
        for trace in reason.traces:
            at = "" if trace.time is None else f" at {trace.time.strftime('%H:%M:%S')}"
            value = "" if trace.value is None else f", value {trace.value:.4g}"
            parts.append(Text(f"  trace {trace.trace_id} on pod {trace.pod or '?'}{at}{value}"))
    if status.phase is Phase.ROLLED_BACK:
        parts.append(_next_step(meta, spec))
    if status.internal_error is not None:
        parts.extend(_internal_error_lines(status.internal_error, meta))
    parts.extend(_coin_toss_line(warning) for warning in status.false_rollback_warnings)
    if status.gate is not None:
        parts.append(render_gate(status.gate))
    parts.extend(analysis_input_lines(status))
    if (cost := cost_text(status.cost)) is not None:
        parts.append(Text(f"Cost per million output tokens: {cost}"))
    if status.analysis or status.phase is not Phase.FAILED:  # a Failed rollout never judged has no table
        parts.append(AnalysisView(metric_rows(spec, status)))
    return Group(*parts)


def _header(
    meta: dict[str, Any],
    spec: dict[str, Any],
    status: ModelRolloutStatus,
    live_weights: tuple[int, int] | str | None,
    now: datetime | None,
) -> Table:
    """The rollout's name, phase, step, weights, mirror, live route, pause and message."""
    steps = spec.get("steps", [])
    phase = str(status.phase or "Pending")
    header = Table.grid(padding=(0, 2))
    header.add_row("Rollout", f"{meta['namespace']}/{meta['name']}")
    header.add_row("Phase", Text(phase, style=PHASE_STYLE.get(phase, "")))
    header.add_row("Step", _step_text(steps, status, now))
    ended_unrouted = status.phase is Phase.FAILED and status.live_weight is None  # no route was ever read
    if not ended_unrouted:
        header.add_row(
            "Weights",
            f"{side_name(spec['incumbent'])} {100 - status.current_weight}% / "
            f"{side_name(spec['candidate'])} {status.current_weight}%",
        )
    if status.current_mirror_percent or status.live_mirror_percent:
        live = status.live_mirror_percent
        header.add_row(
            "Mirror",
            f"{status.current_mirror_percent}% of requests copied to the candidate (live: "
            f"{'unknown' if live is None else f'{live}%'})",
        )
    if isinstance(live_weights, tuple):
        header.add_row("Live route", f"{live_weights[0]} / {live_weights[1]}")
    elif live_weights is not None:
        header.add_row("Live route", Text(live_weights, style="red"))
    if status.route_owner is not None:
        header.add_row("Route owner", Text(f"{status.route_owner} steers this route rule", style="yellow"))
    if status.pause is not None:
        header.add_row("Paused", _pause_line(status, meta))
    header.add_row("Message", status.message or "")
    return header


ENDED_PHASES = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)


def _step_text(steps: list[dict[str, Any]], status: ModelRolloutStatus, now: datetime | None) -> str:
    """Steps done and the step at hand; an ended rollout's view has no "now": the step it ended in."""
    index = status.current_step_index
    done = f"{min(index, len(steps))}/{len(steps)} completed"
    current = step_label(steps[index]) if index < len(steps) else None
    if status.phase in ENDED_PHASES:
        return done if current is None else f"{done}; ended in: {current}"
    step = current or "done"
    if current is not None and now is not None and status.phase in (Phase.PROGRESSING, Phase.PAUSED):
        step += _time_left(steps[index], status.step_started_at, now)
    if status.watch_ends_at is not None:
        step = f"watch window until {moment(status.watch_ends_at)}"
    return f"{done}; now: {step}"


def _time_left(step: dict[str, Any], started: datetime | None, now: datetime) -> str:
    """How long a timed pause or mirror step has to go, from the step's start in the status."""
    duration = (step.get("pause") or step.get("mirror") or {}).get("duration")
    if not duration or started is None:
        return ""
    left = started + parse_duration(duration) - now
    return f" ({_span(max(0, math.ceil(left.total_seconds())))} left)"


def _pause_line(status: ModelRolloutStatus, meta: dict[str, Any]) -> Text:
    """The pause's reason, since when, and what ends it (status.pause, never a condition's reason)."""
    pause = status.pause
    assert pause is not None
    target = f"{meta['name']} -n {meta['namespace']}"
    if pause.reason in RESUMABLE:
        ends = f"`modelgate resume {target}` ends it"
    elif pause.reason is PauseReason.INDEFINITE_STEP:
        ends = f"`modelgate promote {target}` ends it"
    elif pause.reason is PauseReason.ROUTE_CLAIMED and status.route_state is RouteState.CLAIMED:
        ends = f"it ends when {status.route_owner} ends or is deleted"
    elif pause.reason is PauseReason.ROUTE_CLAIMED:
        ends = "it ends when the route serves spec.incumbent, or the spec names the backend it serves"
    elif pause.reason is PauseReason.POLICY_UNRESOLVED:
        ends = f"it ends when spec.policyRef resolves: {pause.message}"
    else:
        ends = "it ends when the incumbent is Available"
    return Text(f"{pause.reason} since {moment(pause.since)}; {ends}", style="yellow")


def _next_step(meta: dict[str, Any], spec: dict[str, Any]) -> Text:
    target = f"{meta['name']} -n {meta['namespace']}"
    prometheus = ((spec.get("analysis") or {}).get("prometheus") or {}).get("address")
    switch = f" {ALLOW_LOOPBACK_FLAG}" if names_loopback(prometheus) else ""  # a bed, a port-forward
    return Text(
        f"Next: `modelgate report {target}{switch}` shows the evidence; apply a fixed candidate "
        f"(spec.candidate) to start again, or `modelgate retry {target}` to try this one again.",
        style="bold",
    )


def _internal_error_lines(error: InternalError, meta: dict[str, Any]) -> list[Text]:
    target = f"{meta['name']} -n {meta['namespace']}"
    return [
        Text(f"Internal error in the operator (a bug): {error.type}: {error.message}", style="bold red"),
        Text(
            f"Its ticks raised it from {moment(error.time)} on; the candidate's traffic went back to the "
            f"incumbent. Report it with the operator's log; `modelgate retry {target}` starts again.",
            style="bold",
        ),
    ]


def _breach_line(reason: RollbackReason) -> str:
    """The breach read from its fields: the rule, the value, the bound it broke, the incumbent's value."""
    line = f"  rule {reason.rule}: value {number_text(reason.value)}"
    if reason.threshold is not None:
        line += f", bound {number_text(reason.threshold)}"
    if reason.incumbent_value is not None:
        line += f", incumbent {number_text(reason.incumbent_value)}"
    if reason.bounds is not None:
        line += f"; {bounds_text(reason.bounds)}"
    if reason.quantile_bounds is not None:
        line += f"; {quantile_bounds_text(reason.quantile_bounds)}"
    return line


def _coin_toss_line(warning: FalseRollbackWarning) -> Text:
    return Text(
        f"Warning: {warning.metric} in step {warning.step} rolls back a candidate as good as the incumbent "
        f"with a chance of about {warning.chance:.0%} ({warning.candidate_requests:.0f} candidate requests "
        f"a window, rate {warning.base_rate:.3g}); `modelgate plan` shows why",
        style="yellow",
    )


def _labelled(label: str, text: RenderableType) -> Table:
    """The text beside its label, wrapping under itself rather than under the label."""
    grid = Table.grid(padding=(0, 1))
    grid.add_row(label, text)
    return grid


def _pods_table(metric: str, reason: RollbackReason) -> RenderableType:
    table = Table()
    table.add_column("Pod")
    table.add_column("Value")
    for pod in reason.pods:
        table.add_row(pod.pod, number_text(pod.value))
    # Above the table rather than its title, which would wrap at the width of the table's columns.
    return Group(Text(f"{metric} by candidate pod (worst first)", style="italic"), table)


def _age(created: str | None) -> str:
    if not created:
        return "-"
    return _span(
        int((datetime.now(UTC) - datetime.fromisoformat(created.replace("Z", "+00:00"))).total_seconds())
    )


def _span(seconds: int) -> str:
    """Seconds in their largest unit: 45s, 3m, 2h, 5d."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def render_list(rollouts: list[dict[str, Any]], *, with_namespace: bool) -> Table:
    """The `kubectl get mro` columns."""
    table = Table(box=None, header_style="bold")
    columns = ["NAMESPACE"] if with_namespace else []
    for column in [*columns, "NAME", "PHASE", "WEIGHT", "STEP", "INCUMBENT", "CANDIDATE", "AGE", "MESSAGE"]:
        table.add_column(column)
    for body in rollouts:
        meta, spec, status = body["metadata"], body["spec"], body.get("status") or {}
        phase = status.get("phase") or "-"
        row = [meta["namespace"]] if with_namespace else []
        table.add_row(
            *row,
            meta["name"],
            Text(phase, style=PHASE_STYLE.get(phase, "")),
            str(status.get("currentWeight", "-")),
            str(status.get("currentStepIndex", "-")),
            side_name(spec["incumbent"]),
            side_name(spec["candidate"]),
            _age(meta.get("creationTimestamp")),
            short_message(status.get("message")) or "",
        )
    return table


def render_progress(rollouts: list[dict[str, Any]]) -> Table:
    """One progress bar per rollout: steps done, and the candidate's share of traffic."""
    table = Table(box=None, show_header=False, padding=(0, 1))
    for body in rollouts:
        status = parse_status(body.get("status") or {})
        steps = len(body["spec"].get("steps", []))
        done = min(status.current_step_index, steps)
        phase = str(status.phase or "Pending")
        style = PHASE_STYLE.get(phase, "")
        table.add_row(
            body["metadata"]["name"],
            ProgressBar(total=steps or 1, completed=done, width=30, complete_style=style or "cyan"),
            f"step {done}/{steps}",
            f"candidate {status.current_weight}%",
            Text(phase, style=style),
        )
    return table


def render_history(body: dict[str, Any], events: list[dict[str, Any]]) -> RenderableType:
    """Transitions as Events recorded them, then the recent analysis samples of every metric."""
    transitions = Table(title="Transitions (Events)", title_justify="left")
    for column in ("Time", "Type", "Reason", "Message"):
        transitions.add_column(column)
    for event in events:
        when = str(event.get("eventTime") or event.get("deprecatedLastTimestamp") or "")[:19].replace(
            "T", " "
        )
        style = "red" if event.get("type") == "Warning" else ""
        transitions.add_row(
            when, Text(str(event.get("type")), style=style), str(event.get("reason")), str(event.get("note"))
        )
    status = parse_status(body.get("status") or {})
    samples = Table(title="Recent analysis", title_justify="left")
    for column in ("Metric", "Time", "Value", "Verdict"):
        samples.add_column(column)
    for metric in status.analysis:
        for sample in metric.history:
            verdict = Text(sample.verdict.value, style=VERDICT_STYLE[sample.verdict])
            samples.add_row(metric.name, sample.time.strftime("%H:%M:%S"), number_text(sample.value), verdict)
    return Group(transitions, samples)
