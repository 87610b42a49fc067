"""How a rollout looks in a terminal (shared by `status` and the demo's live view)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from rich.console import Group, RenderableType
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from modelgate.api import MetricAnalysis, ModelRolloutStatus, RollbackReason, Verdict, parse_status

VERDICT_STYLE = {
    Verdict.PASS: "green",
    Verdict.FAIL: "bold red",
    Verdict.INCONCLUSIVE: "yellow",
    Verdict.ERROR: "magenta",
}
PHASE_STYLE = {
    "Succeeded": "bold green",
    "RolledBack": "bold red",
    "Failed": "bold red",
    "Paused": "yellow",
    "Progressing": "cyan",
    "Pending": "dim",
}


def threshold_text(metric: Mapping[str, Any]) -> str:
    """The metric's rule in words, from its spec as stored (camelCase)."""
    parts = []
    if metric.get("min") is not None:
        parts.append(f">= {metric['min']:g}")
    if metric.get("max") is not None:
        parts.append(f"<= {metric['max']:g}")
    compare = metric.get("compare") or {}
    if compare.get("maxRatio") is not None:
        parts.append(f"<= {compare['maxRatio']:g} x incumbent")
    if compare.get("maxIncrease") is not None:
        parts.append(f"<= incumbent + {compare['maxIncrease']:g}")
    if metric.get("sequential"):
        parts.append(f"sequential test, alpha {metric['sequential'].get('alpha', 0.05):g}")
    text = " and ".join(parts)
    return f"{text} (dry run)" if metric.get("dryRun") else text


def step_label(step: dict[str, Any]) -> str:
    if "setWeight" in step:
        return f"setWeight {step['setWeight']}"
    if "mirror" in step:
        return f"mirror {step['mirror']['percent']}% for {step['mirror']['duration']}"
    duration = (step.get("pause") or {}).get("duration")
    return f"pause {duration}" if duration else "pause (until promote)"


def side_name(side: dict[str, Any]) -> str:
    """A spec side's workload: its Deployment's name, or `pool/<name>` for an InferencePool."""
    pool = side.get("inferencePool")
    return f"pool/{pool}" if pool else str(side.get("deployment", "-"))


def render_status(body: dict[str, Any], live_weights: tuple[int, int] | str | None = None) -> RenderableType:
    meta, spec = body["metadata"], body["spec"]
    status = parse_status(body.get("status") or {})
    steps = spec.get("steps", [])
    phase = str(status.phase or "Pending")
    header = Table.grid(padding=(0, 2))
    header.add_row("Rollout", f"{meta['namespace']}/{meta['name']}")
    header.add_row("Phase", Text(phase, style=PHASE_STYLE.get(phase, "")))
    index = status.current_step_index
    step = step_label(steps[index]) if index < len(steps) else "done"
    if status.watch_ends_at is not None:
        step = f"watch window until {status.watch_ends_at.isoformat()}"
    header.add_row("Step", f"{min(index, len(steps))}/{len(steps)} completed; now: {step}")
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
    header.add_row("Message", status.message or "")
    parts: list[RenderableType] = [header]
    if status.rollback_reason is not None:
        reason = status.rollback_reason
        parts.append(Text(f"Rolled back: {reason.message}", style="bold red"))
        if reason.query:
            parts.append(Text(f"  query: {reason.query}", style="dim"))
        if reason.pods:
            parts.append(_pods_table(reason.metric or "metric", reason))
        for trace in reason.traces:
            at = "" if trace.time is None else f" at {trace.time.strftime('%H:%M:%S')}"
            value = "" if trace.value is None else f", value {trace.value:.4g}"
            parts.append(Text(f"  trace {trace.trace_id} on pod {trace.pod or '?'}{at}{value}"))
    parts.append(_metrics_table(spec, status))
    return Group(*parts)


def _pods_table(metric: str, reason: RollbackReason) -> Table:
    table = Table(title=f"{metric} by candidate pod (worst first)", title_justify="left")
    table.add_column("Pod")
    table.add_column("Value")
    for pod in reason.pods:
        table.add_row(pod.pod, "-" if pod.value is None else f"{pod.value:.4g}")
    return table


def _metrics_table(spec: dict[str, Any], status: ModelRolloutStatus) -> Table:
    table = Table(title="Analysis", title_justify="left")
    for column in ("Metric", "Value", "Incumbent", "Threshold", "Verdict", "Failures", "At", "Detail"):
        table.add_column(column)
    last = {m.name: m for m in status.analysis}
    window = (spec.get("watch") or {}).get("metrics") if status.watch_ends_at is not None else None
    for metric in window or (spec.get("analysis") or {}).get("metrics", []):
        record = last.get(metric["name"])
        limit = metric.get("failureLimit", 0)
        if record is None:
            table.add_row(
                metric["name"], "-", "-", threshold_text(metric), "-", f"0/{limit}", "-", "not evaluated yet"
            )
            continue
        value = "-" if record.value is None else f"{record.value:.4g}"
        incumbent = "-" if record.incumbent_value is None else f"{record.incumbent_value:.4g}"
        table.add_row(
            metric["name"],
            value,
            incumbent,
            threshold_text(metric),
            Text(record.verdict.value, style=VERDICT_STYLE[record.verdict]),
            f"{record.failures}/{limit}",
            record.time.strftime("%H:%M:%S"),
            _detail(metric, record),
        )
    return table


def _detail(metric: dict[str, Any], record: MetricAnalysis) -> str:
    """The verdict's reason, and for a sequential test how far its evidence is from a rollback."""
    evidence = record.sequential
    if evidence is None or not metric.get("sequential"):
        return record.message or ""
    limit = 1 / float(metric["sequential"].get("alpha", 0.05))
    return f"{record.message or ''}; evidence {math.exp(evidence.log_evidence):.3g} of {limit:g}".lstrip("; ")


def _age(created: str | None) -> str:
    if not created:
        return "-"
    seconds = int(
        (datetime.now(UTC) - datetime.fromisoformat(created.replace("Z", "+00:00"))).total_seconds()
    )
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
            status.get("message") or "",
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
            value = "-" if sample.value is None else f"{sample.value:.4g}"
            verdict = Text(sample.verdict.value, style=VERDICT_STYLE[sample.verdict])
            samples.add_row(metric.name, sample.time.strftime("%H:%M:%S"), value, verdict)
    return Group(transitions, samples)
