"""`modelgate report NAME`: a rollout's timeline as one self-contained HTML page (and a PNG).

What it shows comes from the rollout (spec, status, Events) and from Prometheus: each metric's own
query (the plan the operator runs) as a range query over the rollout's span. The weights and step
starts are the status's own record (stepStarts, weightChanges), exact and kept as long as the object."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console

from modelgate.api import (
    EarlierRollout,
    ModelRolloutSpec,
    ModelRolloutStatus,
    parse_spec,
    parse_status,
)
from modelgate.cli.loopback import add_loopback_option
from modelgate.cli.render.cost import cost_text
from modelgate.cli.render.rollout import side_name, step_label
from modelgate.cli.report.output import OutputFailed, write_output
from modelgate.cli.report.page import render_page
from modelgate.cli.report.ranges import fetch_ranges, resolution
from modelgate.cli.report.story import outcome
from modelgate.cli.report.timeline import (
    EventRow,
    Mark,
    MetricTrace,
    Points,
    Timeline,
    metric_traces,
    rollback_mark,
    seconds,
    step_marks,
    steps_from_status,
    weights_from_status,
)
from modelgate.cli.report.vega import MissingRenderer, check_renderer, write_png
from modelgate.cli.target import add_target_arguments, connect, read_rollout
from modelgate.core.reasons import moment
from modelgate.egress import policy_from_environment, token_allowlist
from modelgate.kube import NotFound
from modelgate.metrics import PrometheusProvider
from modelgate.metrics.prometheus import TokenUnavailable
from modelgate.metrics.prometheus_http import PrometheusClient
from modelgate.metrics.provider import AnalysisPlan
from modelgate.metrics.recorded import RecordedSeries

# Status fields the charts already show; every other one is shown as it is stored.
CHARTED = ("analysis", "rollbackReason", "conditions", "earlierRollouts", "stepStarts", "weightChanges")
WEIGHT_SOURCE = "the rollout's status (weightChanges, stepStarts)"


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    report = commands.add_parser(
        "report",
        help="a rollout's timeline as one self-contained HTML page (and a PNG)",
        description="Weights, steps, each metric against its threshold (Prometheus range queries over "
        "the rollout's span), verdicts, Events, the rollback reason and every other status field.",
    )
    add_target_arguments(report)
    report.add_argument(
        "-o",
        "--output",
        help="the HTML file, or s3://bucket/key to write it to object storage with the $AWS_* "
        "credentials (default: NAME-report.html)",
    )
    report.add_argument("--png", type=Path, help="also draw the same charts as a PNG")
    report.add_argument(
        "--prometheus", help="the Prometheus to ask (default: spec.analysis.prometheus.address)"
    )
    add_loopback_option(report)
    report.set_defaults(handler=write_report)


def write_report(args: argparse.Namespace) -> int:
    console = Console(stderr=True)
    try:
        check_renderer()
    except MissingRenderer as error:
        console.print(f"[red]modelgate report: {error}[/red]")
        return 1
    kube, namespace = connect(args)
    try:
        body = read_rollout(kube, namespace, args.name)
    except NotFound:
        console.print(f"[red]ModelRollout {namespace}/{args.name} not found[/red]")
        return 1
    spec, status = parse_spec(body["spec"]), parse_status(body.get("status") or {})
    events = [_event_row(event) for event in kube.list_events(namespace, "ModelRollout", args.name)]
    start, end = rollout_span(body, status, events, datetime.now(UTC))
    ranges: dict[str, RecordedSeries] = {}
    plan = None
    address = args.prometheus or (spec.analysis.prometheus.address if spec.analysis else None)
    if address is not None:
        egress = policy_from_environment([kube.server_url], os.environ)
        provider = PrometheusProvider(kube, egress, token_allowlist(os.environ))
        plan = provider.plan(spec, namespace) if spec.analysis is not None else None
        try:
            client = _client(provider, plan, address, console)
        except ValueError as error:
            console.print(f"[red]modelgate report: {error}[/red]")
            return 1
        interval = spec.analysis.interval_timedelta if spec.analysis else timedelta(seconds=15)
        queries = _metric_queries(plan)
        ranges = fetch_ranges(client, queries, start, end, resolution(start, end, interval), console)
    timeline = report_timeline(body, spec, status, events, plan, ranges, (start, end), address)
    try:
        written = write_output(args.output or f"{args.name}-report.html", render_page(timeline))
    except OutputFailed as error:
        console.print(f"[red]modelgate report: {error}[/red]")
        return 1
    console.print(f"wrote {written}")
    if args.png is not None:
        write_png(timeline, args.png)
        console.print(f"wrote {args.png}")
    return 0


def _client(
    provider: PrometheusProvider, plan: AnalysisPlan | None, address: str, console: Console
) -> PrometheusClient:
    """The operator's client for the plan: its bearer token included where the Secret (or
    $MODELGATE_TOKEN_ADDRESSES) names the address, as the operator's rule is; else one without it.
    Raises ValueError for an address the egress policy refuses."""
    if plan is not None:
        try:
            return provider.client(plan, address)
        except TokenUnavailable as error:  # e.g. no permission to read the Secret, or not allowed
            console.print(f"[yellow]asking Prometheus without the rollout's bearer token: {error}[/yellow]")
    return provider.client_without_token(address)


def rollout_span(
    body: Mapping[str, Any], status: ModelRolloutStatus, events: Sequence[EventRow], now: datetime
) -> tuple[datetime, datetime]:
    """From the current candidate's start (or, before status recorded it, the first Event or the
    rollout's creation) to its end and a little after, or to now."""
    created = datetime.fromisoformat(body["metadata"].get("creationTimestamp") or now.isoformat())
    times = [datetime.fromtimestamp(e.time, UTC) for e in events]
    start = status.rollout_started_at or min([created, *times]) - timedelta(seconds=5)
    times = [t for t in times if t >= start]
    if not status.ended:
        return start, now
    ended = max([*times, *(r.time for r in [status.rollback_reason] if r is not None), start])
    return start, min(now, ended + max((ended - start) / 10, timedelta(seconds=10)))


def _metric_queries(plan: AnalysisPlan | None) -> list[str]:
    if plan is None:
        return []
    return [q for m in plan.metrics.values() for q in (m.candidate, m.incumbent_drawn) if q is not None]


def report_timeline(
    body: Mapping[str, Any],
    spec: ModelRolloutSpec,
    status: ModelRolloutStatus,
    events: Sequence[EventRow],
    plan: AnalysisPlan | None,
    ranges: Mapping[str, RecordedSeries],
    span: tuple[datetime, datetime],
    prometheus: str | None,
) -> Timeline:
    """Everything fetched, put together (pure): of the current candidate's rollout only, from
    `span`'s start; the earlier ones this object ran are listed, not drawn."""
    meta, raw_status = body["metadata"], body.get("status") or {}
    start, end = seconds(span[0]), seconds(span[1])
    events = [e for e in events if e.time >= start]
    weights, started = weights_from_status(status, start), steps_from_status(status)
    if status.step_started_at is not None and not status.ended:
        started[status.current_step_index] = seconds(status.step_started_at)
    labels = [step_label(s) for s in body["spec"].get("steps", [])]
    marks: list[Mark] = [*step_marks(body["spec"], started, labels), *rollback_mark(status)]
    metrics: tuple[MetricTrace, ...] = ()
    if plan is not None:
        metrics = metric_traces(spec, body["spec"], status, _metric_ranges(plan, ranges))
    summary = (
        ("Rollout", f"{meta['namespace']}/{meta['name']}"),
        ("Phase", f"{status.phase or 'Pending'}: {status.message or ''}"),
        (
            "Incumbent / candidate",
            f"{side_name(body['spec']['incumbent'])} / {side_name(body['spec']['candidate'])}",
        ),
        ("Steps", "; ".join(f"{i}: {label}" for i, label in enumerate(labels))),
        ("Span", f"{moment(span[0])} to {span[1]:%H:%M:%S} UTC"),
        ("Prometheus", prometheus or "none: no analysis, and no --prometheus"),
        *((("Cost per million output tokens", cost),) if (cost := cost_text(status.cost)) else ()),
    )
    details: list[tuple[str, Any]] = []
    if raw_status.get("rollbackReason"):
        details.append(("Rollback reason", raw_status["rollbackReason"]))
    if raw_status.get("analysis"):
        latest = [
            {k: v for k, v in m.items() if k not in ("history", "query")} for m in raw_status["analysis"]
        ]
        details.append(("Latest analysis", latest))
    other = {k: v for k, v in raw_status.items() if k not in CHARTED}
    details.extend([("Status", other), ("Conditions", raw_status.get("conditions") or [])])
    return Timeline(
        f"ModelRollout {meta['namespace']}/{meta['name']}",
        summary,
        start,
        end,
        weights,
        WEIGHT_SOURCE,
        tuple(sorted(marks, key=lambda m: m.time)),
        metrics,
        tuple(events),
        tuple(details),
        outcome(status, side_name(body["spec"]["candidate"]), {m.name: m.unit for m in metrics}),
        status.rollback_reason.metric if status.rollback_reason is not None else None,
        tuple(_earlier(r) for r in status.earlier_rollouts),
    )


def _earlier(rollout: EarlierRollout) -> tuple[str, str, str]:
    started = moment(rollout.started_at) if rollout.started_at is not None else "not recorded"
    return rollout.candidate, started, str(rollout.phase or "not recorded")


def _metric_ranges(
    plan: AnalysisPlan, ranges: Mapping[str, RecordedSeries]
) -> dict[str, tuple[str, Points, Points, str | None]]:
    """Each metric's query, the candidate's and the incumbent's ranges, and the error that keeps it
    from being drawn: the candidate's, or the incumbent's where the threshold moves with it. A fixed
    threshold's chart goes without the incumbent's line when that alone could not be had."""
    traces = {}
    for name, metric in plan.metrics.items():
        candidate = ranges.get(metric.candidate, RecordedSeries(error="not fetched"))
        incumbent = ranges.get(metric.incumbent_drawn or "", RecordedSeries())
        compares = metric.incumbent is not None
        error = candidate.error or (incumbent.error if compares else None)
        traces[name] = (metric.candidate, candidate.points, _points(incumbent), error)
    return traces


def _points(series: RecordedSeries | None) -> Points:
    return series.points if series is not None and series.error is None else ()


def _event_row(event: Mapping[str, Any]) -> EventRow:
    when = str(event.get("eventTime") or event.get("deprecatedLastTimestamp") or "")
    return EventRow(
        datetime.fromisoformat(when).timestamp() if when else 0.0,
        str(event.get("type", "")),
        str(event.get("reason", "")),
        str(event.get("note", "")),
    )
