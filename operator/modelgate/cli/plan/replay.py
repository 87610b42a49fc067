"""`modelgate replay -f rollout.yaml --from T1 --to T2`: what a rollout's analysis would have done over
recorded history. The same plan (PromQL) and the same engine as the operator, on a simulated clock
(`simulation.py`); the only I/O is one range query per query of the plan.

`--aa` replays the incumbent against itself, started again and again across the range: how often
the thresholds fire when nothing changed at all."""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from modelgate.api import (
    AnalysisSpec,
    InvalidSpecError,
    ModelRolloutSpec,
    ModelRolloutStatus,
    Phase,
    parse_spec,
)
from modelgate.api.addresses import AddressRefused
from modelgate.api.duration import parse_duration
from modelgate.cli.exit_codes import ExitCode
from modelgate.cli.loopback import add_loopback_option
from modelgate.cli.plan.simulation import Replay, simulate
from modelgate.cli.render.rollout import step_label
from modelgate.cli.report.ranges import fetch_ranges, resolution
from modelgate.cli.report.timeline import EventRow, Mark, Timeline, metric_traces, seconds
from modelgate.cli.report.vega import MissingRenderer, check_renderer, write_png
from modelgate.cli.target import OUTPUT_HELP, read_manifest
from modelgate.egress import policy_from_environment
from modelgate.metrics.prometheus_http import PrometheusClient
from modelgate.metrics.provider import AnalysisPlan, plan_queries
from modelgate.metrics.recorded import RecordedProvider, RecordedSeries

# A/A runs start this many times across the range unless --stride says otherwise.
AA_RUNS = 20


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    replay = commands.add_parser(
        "replay",
        help="run a rollout's analysis over recorded Prometheus history, on a simulated clock",
        description="Prints when each step would have ended and whether and when the rollout would have "
        "rolled back (which metric, what value). Nothing is written to any cluster.",
    )
    replay.add_argument("-f", "--filename", type=Path, required=True, help="a ModelRollout manifest")
    replay.add_argument(
        "--from", dest="start", required=True, help="start: RFC 3339 (2026-01-05T09:00:00Z) or now-DURATION"
    )
    replay.add_argument("--to", dest="end", default="now", help="end, likewise (default: %(default)s)")
    replay.add_argument("-n", "--namespace", help="default: the manifest's, else 'default'")
    replay.add_argument("--prometheus", help="default: spec.analysis.prometheus.address")
    add_loopback_option(replay)
    replay.add_argument("--step", help="range query resolution (default: the analysis interval)")
    replay.add_argument(
        "--aa", action="store_true", help="A/A: the incumbent against itself, from sliding start times"
    )
    replay.add_argument("--stride", help=f"A/A: time between start times (default: the range / {AA_RUNS})")
    replay.add_argument(
        "--png", type=Path, help="also draw the replay as a PNG (needs modelgate-operator[report])"
    )
    replay.add_argument("-o", "--output", choices=["table", "json"], default="table", help=OUTPUT_HELP)
    replay.set_defaults(handler=run_replay)


def run_replay(args: argparse.Namespace) -> int:
    console = Console()
    try:
        manifest = read_manifest(args.filename)
        spec = parse_spec(manifest.get("spec") or {})
    except (ValueError, InvalidSpecError) as error:
        console.print(f"[red]modelgate replay: {error}[/red]")
        return ExitCode.ERROR
    now = datetime.now(UTC)
    try:
        start, end = moment(args.start, now, "--from"), moment(args.end, now, "--to")
    except ValueError as error:
        console.print(f"[red]modelgate replay: {error}[/red]")
        return ExitCode.USAGE
    if end <= start:
        console.print("[red]modelgate replay: --to must be after --from[/red]")
        return ExitCode.USAGE
    if args.png is not None:
        try:
            check_renderer()
        except MissingRenderer as error:
            console.print(f"[red]modelgate replay: {error}[/red]")
            return ExitCode.ERROR
    if spec.analysis is None:
        console.print("[red]modelgate replay: the rollout has no spec.analysis[/red]")
        return ExitCode.NOTHING_TO_SIMULATE
    namespace = args.namespace or (manifest.get("metadata") or {}).get("namespace") or "default"
    replayed = incumbent_against_itself(spec) if args.aa else spec
    provider = RecordedProvider({})
    plan = provider.plan(replayed, namespace)
    try:
        history = recorded_history(args, spec.analysis, plan, start, end)
    except ValueError as error:  # an address the egress policy refuses
        console.print(f"[red]modelgate replay: {error}[/red]")
        return ExitCode.ERROR
    failed = {query: series.error for query, series in history.items() if series.error is not None}
    if len(failed) == len(history):
        console.print(f"[red]modelgate replay: no history: {next(iter(failed.values()))}[/red]")
        return ExitCode.ERROR
    for query, why in failed.items():  # replayed as Error results, as the operator would have had them
        console.print(f"[yellow]no history for {query}: {why}[/yellow]")
    provider = RecordedProvider(history)
    if args.aa:
        stride = parse_duration(args.stride) if args.stride else (end - start) / AA_RUNS
        runs = [simulate(replayed, provider, plan, s, end) for s in start_times(start, end, stride)]
    else:
        runs = [simulate(replayed, provider, plan, start, end)]
    if args.output == "json":
        print(json.dumps(as_json(runs, aa=args.aa), indent=1))
    elif args.aa:
        console.print(aa_table(runs))
        console.print(aa_summary(runs))
    else:
        console.print(steps_table(replayed, runs[0]))
        console.print(outcome_line(runs[0]))
    if args.png is not None:
        write_png(replay_timeline(replayed, plan, history, runs, (start, end), aa=args.aa), args.png)
        console.print(f"wrote {args.png}")
    return 0


def recorded_history(
    args: argparse.Namespace, analysis: AnalysisSpec, plan: AnalysisPlan, start: datetime, end: datetime
) -> dict[str, RecordedSeries]:
    """One range query per query of the plan (and per incumbent line of the PNG), from the
    Prometheus held to the egress policy, as by `report` and the operator. Raises ValueError for an
    address the policy refuses."""
    address, egress = args.prometheus or analysis.prometheus.address, policy_from_environment([], os.environ)
    try:
        egress.check_url(address)  # a literal IP now; the address each connection reaches when made
    except AddressRefused as refused:
        raise ValueError(f"the Prometheus address {refused}") from None
    timeout = max(analysis.prometheus.timeout_timedelta.total_seconds(), 30)
    client = PrometheusClient(address, timeout=timeout, egress=egress)
    step = resolution(start, end, parse_duration(args.step) if args.step else analysis.interval_timedelta)
    queries = list(plan_queries(plan))
    if args.png is not None and not args.aa:  # the incumbent's line beside each metric's in the PNG
        queries += [q for q in drawn_incumbents(plan) if q not in queries]
    return fetch_ranges(client, queries, start, end, step, Console(stderr=True))


def drawn_incumbents(plan: AnalysisPlan) -> list[str]:
    """The incumbent's queries of the metrics that do not compare (those that do are in the plan)."""
    return [m.incumbent_drawn for m in plan.metrics.values() if m.incumbent is None and m.incumbent_drawn]


def moment(text: str, now: datetime, option: str) -> datetime:
    """RFC 3339 with a zone, `now`, or `now-DURATION`."""
    if text == "now" or text.startswith("now-"):
        return now - (parse_duration(text[4:]) if text != "now" else timedelta())
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None:
        raise ValueError(
            f"{option} {text!r}: expected RFC 3339 with a zone (2026-01-05T09:00:00Z) or now-DURATION"
        )
    return parsed.astimezone(UTC)


def incumbent_against_itself(spec: ModelRolloutSpec) -> ModelRolloutSpec:
    """The spec with the incumbent in the candidate's place: every candidate query reads the
    incumbent's series."""
    return spec.model_copy(update={"candidate": spec.incumbent})


def start_times(start: datetime, end: datetime, stride: timedelta) -> list[datetime]:
    if stride <= timedelta():
        raise ValueError("--stride must be positive")
    count = int((end - start) / stride)
    return [start + stride * i for i in range(max(count, 1))]


def _clock(moment_: datetime | None) -> str:
    return "-" if moment_ is None else f"{moment_:%Y-%m-%d %H:%M:%S}"


def steps_table(spec: ModelRolloutSpec, replay: Replay) -> Table:
    table = Table(title="Replayed steps (UTC)", title_justify="left")
    for column in ("Step", "What", "Started", "Ended"):
        table.add_column(column)
    labels = [step_label(s.model_dump(by_alias=True, exclude_none=True)) for s in spec.steps]
    for span in replay.steps:
        ended = (
            _clock(span.ended_at) if span.ended_at else "rolled back" if replay.rollback else "not by the end"
        )
        table.add_row(str(span.index), labels[span.index], _clock(span.started_at), ended)
    return table


def outcome_line(replay: Replay) -> str:
    reason = replay.rollback
    if reason is not None:
        step = replay.status.current_step_index
        return (
            f"[bold red]would have rolled back[/] at {_clock(reason.time)} in step {step}: {reason.message}"
        )
    if replay.phase is Phase.SUCCEEDED:
        return f"[bold green]would have succeeded[/] at {_clock(replay.end)}"
    return f"still {replay.phase} when the range ended: {replay.status.message}"


def aa_table(runs: Sequence[Replay]) -> Table:
    table = Table(title="A/A: the incumbent against itself (UTC)", title_justify="left")
    for column in ("Start", "Outcome", "At", "Metric", "Value"):
        table.add_column(column)
    for run in runs:
        reason = run.rollback
        value = "-" if reason is None or reason.value is None else f"{reason.value:.4g}"
        table.add_row(
            _clock(run.start),
            str(run.phase),
            _clock(reason.time if reason else run.end),
            (reason.metric or "-") if reason else "-",
            value,
        )
    return table


def as_json(runs: Sequence[Replay], *, aa: bool) -> dict[str, Any]:
    def one(run: Replay) -> dict[str, Any]:
        reason = run.rollback
        rollback = None
        if reason is not None:
            rollback = {
                "time": reason.time.isoformat(),
                "step": run.status.current_step_index,
                "metric": reason.metric,
                "value": reason.value,
                "message": reason.message,
            }
        steps = [
            {
                "index": s.index,
                "startedAt": s.started_at.isoformat(),
                "endedAt": s.ended_at and s.ended_at.isoformat(),
            }
            for s in run.steps
        ]
        return {
            "start": run.start.isoformat(),
            "end": run.end.isoformat(),
            "phase": run.phase,
            "rollback": rollback,
            "steps": steps,
        }

    if not aa:
        return one(runs[0])
    return {"runs": [one(run) for run in runs], "fired": dict(firings(runs))}


def firings(runs: Sequence[Replay]) -> Counter[str]:
    """Rollbacks on a metric's threshold, by metric."""
    return Counter(run.rollback.metric for run in runs if run.rollback is not None and run.rollback.metric)


def aa_summary(runs: Sequence[Replay]) -> str:
    fired = firings(runs)
    total = sum(fired.values())
    by_metric = ", ".join(f"{metric} {count}" for metric, count in fired.most_common()) or "none"
    return (
        f"thresholds fired in {total} of {len(runs)} runs ({total / len(runs):.0%}); by metric: {by_metric}"
    )


def replay_timeline(
    spec: ModelRolloutSpec,
    plan: AnalysisPlan,
    history: Mapping[str, RecordedSeries],
    runs: Sequence[Replay],
    span: tuple[datetime, datetime],
    *,
    aa: bool,
) -> Timeline:
    """The replay as a Timeline (the PNG's): the recorded metrics, the simulated weights and steps of
    a single replay, or every firing of an A/A one."""
    absent = RecordedSeries()
    ranges = {
        name: (
            m.candidate,
            history[m.candidate].points,
            history.get(m.incumbent or m.incumbent_drawn or "", absent).points,
            history[m.candidate].error,
        )
        for name, m in plan.metrics.items()
    }
    spec_body = spec.model_dump(by_alias=True, exclude_none=True)
    # A single replay's dots are its simulated evaluations (the last ten, as status keeps them).
    metrics = metric_traces(spec, spec_body, ModelRolloutStatus() if aa else runs[0].status, ranges)
    if aa:  # the candidate's series are the incumbent's: drawn once, as the incumbent's
        metrics = tuple(replace(m, incumbent=()) for m in metrics)
    marks = [
        Mark(seconds(r.rollback.time), f"rollback: {r.rollback.metric or '-'}", "rollback")
        for r in runs
        if r.rollback is not None
    ]
    weights: tuple[tuple[float, float], ...] = ()
    events: tuple[EventRow, ...] = ()
    if not aa:
        run = runs[0]
        labels = [step_label(s) for s in spec_body["steps"]]
        marks += [
            Mark(seconds(s.started_at), f"step {s.index}: {labels[s.index]}", "step") for s in run.steps
        ]
        weights = tuple((seconds(t), float(w)) for t, w in run.weights)
        events = tuple(EventRow(seconds(e.time), "", e.reason, e.message) for e in run.events)
    title = f"replay{' A/A' if aa else ''} {span[0]:%Y-%m-%d %H:%M:%S} to {span[1]:%H:%M:%S} UTC"
    summary = (("Outcome", aa_summary(runs) if aa else outcome_line(runs[0])),)
    return Timeline(
        title,
        summary,
        seconds(span[0]),
        seconds(span[1]),
        weights,
        "the simulation",
        tuple(sorted(marks, key=lambda m: m.time)),
        metrics,
        events,
        outcome=summary[0][1],
        candidate_label="incumbent" if aa else "candidate",
    )
