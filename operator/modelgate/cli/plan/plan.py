"""`modelgate plan -f rollout.yaml --rps N --base-rate r`: what a rollout's rules will do before it
is applied. Rollouts are simulated with the operator's own engine over simulated traffic
(`plan_figures.py`); for each metric and step, the chance that a candidate as good as the incumbent
is rolled back, the chance and time to catch a worse one, and how long a good one takes to pass."""

from __future__ import annotations

import argparse
import functools
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TaskProgressColumn, TextColumn
from rich.table import Table

from modelgate.api import InvalidSpecError, MetricSpec, ModelRolloutSpec, parse_spec
from modelgate.cli.exit_codes import ExitCode
from modelgate.cli.plan.assumptions import (
    BASE_RATE_ANNOTATION,
    EXEMPT_ANNOTATION,
    LATENCY_ANNOTATION,
    RPS_ANNOTATION,
    Assumptions,
    assumptions,
    latency_values,
)
from modelgate.cli.plan.figures import (
    AUTO_RUNS,
    Figures,
    Runs,
    Traffic,
    Unplanned,
    figures,
    horizon,
    planned_spec,
    split_metrics,
    step_shares,
)
from modelgate.cli.plan.latency_form import LatencyEstimate, latency_estimates, latency_lines
from modelgate.cli.render.analysis import threshold_text
from modelgate.cli.render.rollout import step_label
from modelgate.cli.target import OUTPUT_HELP, read_manifest
from modelgate.core import counted

EXIT_OK, EXIT_UNREADABLE, EXIT_USAGE = ExitCode.OK, ExitCode.ERROR, ExitCode.USAGE
EXIT_COIN_TOSS, EXIT_NOTHING_TO_PLAN = ExitCode.OVER_THE_BOUND, ExitCode.NOTHING_TO_SIMULATE
EPILOG = """\
traffic: --rps and --base-rate, or the manifest's annotations
  modelgate.io/plan-rps and modelgate.io/plan-base-rate (the flags win)

example:
  modelgate plan -f examples/rollout.yaml
  modelgate plan -f examples/rollout.yaml --runs 2000   # narrower intervals
"""


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    plan = commands.add_parser(
        "plan",
        help="what a rollout's rules will do at a given traffic, simulated with the operator's own engine",
        description="For each metric and step: the chance that a candidate exactly as good as the incumbent "
        "is rolled back, the chance and median time to catch one whose rate is --regression times the "
        "incumbent's, and the median time a good one takes to pass. Simulated with the operator's own "
        "decision code on steady traffic whose requests fail independently; seeded. Only shares of "
        "requests (errorRate, abortRate, refusalRate, slowRequestRate) can be simulated; other metrics "
        "are listed with why, and taken to pass. For a latency preset with compare.confidence, the time "
        "a --regression times slower candidate takes to fail and an as-fast one to pass, from expected "
        "bucket counts at the incumbent's --latency.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    plan.add_argument("-f", "--filename", type=Path, required=True, help="a ModelRollout manifest")
    plan.add_argument(
        "--rps", type=float, help=f"requests per second, both sides together (default: {RPS_ANNOTATION})"
    )
    plan.add_argument(
        "--base-rate",
        type=float,
        help=f"the incumbent's share of failing requests, in [0, 1) (default: {BASE_RATE_ANNOTATION})",
    )
    plan.add_argument(
        "--regression",
        type=float,
        default=2.0,
        help="the worse candidate's rate / the base rate (default: 2)",
    )
    plan.add_argument(
        "--runs",
        type=int,
        help=f"rollouts simulated per candidate (default: up to {AUTO_RUNS.most}, fewer on a long rollout)",
    )
    plan.add_argument(
        "--latency",
        action="append",
        default=[],
        metavar="PRESET=SECONDS",
        help=f"the incumbent's latency quantile, e.g. ttftP99=0.057, for the latency form's estimate "
        f"(repeatable; default: {LATENCY_ANNOTATION})",
    )
    plan.add_argument("--seed", type=int, default=1, help="the simulation's seed (default: 1)")
    plan.add_argument(
        "--fail-above",
        type=float,
        help=f"exit {ExitCode.OVER_THE_BOUND.value} when a false-rollback chance is above this",
    )
    plan.add_argument("-o", "--output", choices=["table", "json"], default="table", help=OUTPUT_HELP)
    plan.set_defaults(handler=run_plan)


def run_plan(args: argparse.Namespace) -> int:
    console, errors = Console(), Console(stderr=True)  # errors apart: stdout may be JSON
    try:
        manifest = read_manifest(args.filename)
        spec = parse_spec(manifest.get("spec") or {})
    except (ValueError, InvalidSpecError) as error:
        errors.print(f"[red]modelgate plan: {error}[/red]")
        return EXIT_UNREADABLE
    try:  # the traffic: the flags, or the manifest's annotations in their place
        assumed = assumptions(manifest)
        traffic = _traffic(args, assumed)
        flagged_latencies = latency_values(args.latency, "--latency")
    except ValueError as error:
        errors.print(f"[red]modelgate plan: {error}[/red]")
        return EXIT_USAGE
    if spec.analysis is None:
        errors.print("[red]modelgate plan: the rollout has no spec.analysis: nothing decides its steps[/red]")
        return EXIT_NOTHING_TO_PLAN
    planned, unplanned = split_metrics(spec)
    groups = _groups(planned)
    runs = AUTO_RUNS if args.runs is None else Runs.exactly(args.runs)
    results = _simulate(spec, groups, traffic, runs, args.seed)
    latencies = latency_estimates(spec, traffic, {**assumed.latencies, **flagged_latencies})
    if args.output == "json":
        zero = zero_error_passes(spec, planned, traffic)
        print(json.dumps(as_json(traffic, results, unplanned, assumed.exempt, zero, latencies), indent=1))
    else:
        console.print(_preamble(spec, traffic, runs, args.seed))
        if assumed.exempt:
            console.print(f"Exempt ({EXEMPT_ANNOTATION}): {assumed.exempt}", markup=False)
        for (_, metrics), result in zip(groups, results, strict=True):
            console.print(figures_table(spec, metrics, traffic, result))
            console.print(_intervals(result, traffic))
        for skipped in unplanned:
            console.print(f"not planned: {skipped.name}: {skipped.why}")
        for passing in zero_error_passes(spec, planned, traffic):
            console.print(_zero_error_text(passing), markup=False)
        for line in latency_lines(latencies, _duration):
            console.print(line, markup=False)
    if not planned and not any(estimate.steps for estimate in latencies):
        errors.print("[red]modelgate plan: no metric the planner can simulate or estimate[/red]")
        return EXIT_NOTHING_TO_PLAN
    worst = max((r.false_rollback for r in results), default=0.0)
    return EXIT_COIN_TOSS if args.fail_above is not None and worst > args.fail_above else EXIT_OK


def _traffic(args: argparse.Namespace, assumed: Assumptions) -> Traffic:
    rps = args.rps if args.rps is not None else assumed.requests_per_second
    base_rate = args.base_rate if args.base_rate is not None else assumed.base_rate
    if rps is None or base_rate is None:
        raise ValueError(
            f"the traffic is unknown: give --rps and --base-rate, or annotate the manifest with "
            f"{RPS_ANNOTATION} and {BASE_RATE_ANNOTATION}"
        )
    if not rps > 0:
        raise ValueError(f"--rps ({RPS_ANNOTATION}) must be positive (got {rps})")
    if not 0 <= base_rate < 1:
        raise ValueError(f"--base-rate ({BASE_RATE_ANNOTATION}) must be in [0, 1) (got {base_rate})")
    if not args.regression > 0 or base_rate * args.regression > 1:
        raise ValueError(f"--regression must be positive and keep the rate at most 1 (got {args.regression})")
    if args.runs is not None and not 1 <= args.runs <= 100_000:
        raise ValueError(f"--runs must be in [1, 100000] (got {args.runs})")
    return Traffic(rps, base_rate, args.regression)


def _groups(planned: Sequence[MetricSpec]) -> list[tuple[str, tuple[MetricSpec, ...]]]:
    """Each planned metric alone, and all of them together when there are several."""
    groups: list[tuple[str, tuple[MetricSpec, ...]]] = [(m.name, (m,)) for m in planned]
    if len(planned) > 1:
        groups.append(("all planned metrics", tuple(planned)))
    return groups


def _simulate(
    spec: ModelRolloutSpec,
    groups: Sequence[tuple[str, tuple[MetricSpec, ...]]],
    traffic: Traffic,
    runs: Runs,
    seed: int,
) -> list[Figures]:
    """Progress on standard error: a bar on a terminal; in a file or a pipe (CI), a line a rule."""
    if not groups:  # only the latency form, or nothing, to plan
        return []
    each = runs.shared(len(groups))
    errors = Console(stderr=True)
    if not errors.is_terminal:
        return [
            _logged(errors, name, planned_spec(spec, metrics), traffic, each, seed)
            for name, metrics in groups
        ]
    columns = (TextColumn("{task.description}"), BarColumn(), TaskProgressColumn())
    with Progress(*columns, console=errors, transient=True) as progress:
        task = progress.add_task("simulating rollouts", total=len(groups))
        results = []
        for done, (name, metrics) in enumerate(groups):
            progress.update(task, description=f"simulating {name}")
            advance = functools.partial(_advanced, progress, task, done)
            results.append(figures(name, planned_spec(spec, metrics), traffic, each, seed, advance))
        return results


def _advanced(progress: Progress, task: TaskID, groups_done: int, share: float) -> None:
    progress.update(task, completed=groups_done + share)


def _logged(
    errors: Console, name: str, spec: ModelRolloutSpec, traffic: Traffic, runs: Runs, seed: int
) -> Figures:
    started = time.monotonic()
    result = figures(name, spec, traffic, runs, seed)
    took = time.monotonic() - started
    errors.print(
        f"modelgate plan: {name}: {result.runs} rollouts of each candidate in {took:.1f}s", markup=False
    )
    return result


def _preamble(spec: ModelRolloutSpec, traffic: Traffic, runs: Runs, seed: int) -> str:
    assert spec.analysis is not None
    left_out = [
        name
        for name, part in (("gate", spec.gate), ("capacity", spec.capacity), ("watch", spec.watch))
        if part
    ]
    lines = [
        f"Simulated: {traffic.requests_per_second:g} requests/s in all; the incumbent fails "
        f"{_percent(traffic.base_rate)} of its requests; the worse candidate "
        f"{_percent(traffic.base_rate * traffic.regression)} ({traffic.regression:g}x).",
        f"{_runs_text(runs)}; seed {seed}. Analysis every {spec.analysis.interval}, "
        f"minRequests {spec.analysis.min_requests}; a rollout still running after "
        f"{_duration(horizon(planned_spec(spec, spec.analysis.metrics)).total_seconds())} counts as waiting.",
        "Caught after: the median time from the rollout's start; step takes: from the step's start.",
    ]
    if left_out:
        lines.append(f"Not simulated: {', '.join(left_out)} (the plan is of the steps and their analysis).")
    return "\n".join(lines)


def _runs_text(runs: Runs) -> str:
    if runs.ticks is None:
        return f"{runs.most} rollouts of each candidate"
    return f"Up to {runs.most} rollouts of each candidate, fewer on a long rollout"


def _intervals(result: Figures, traffic: Traffic) -> str:
    """How far the table's shares may be from the truth: fewer runs, wider intervals."""
    false_low, false_high = result.false_rollback_interval
    caught_low, caught_high = result.caught_interval
    return (
        f"From {result.runs} rollouts of each candidate, 95% intervals: false rollback "
        f"{_percent(false_low)} to {_percent(false_high)}; catches {traffic.regression:g}x "
        f"{_percent(caught_low)} to {_percent(caught_high)}.\n"
    )


def figures_table(
    spec: ModelRolloutSpec, metrics: Sequence[MetricSpec], traffic: Traffic, result: Figures
) -> Table:
    assert spec.analysis is not None
    rules = "; ".join(f"{m.preset} {threshold_text(m.model_dump(by_alias=True))}" for m in metrics)
    title = result.name if len(metrics) > 1 else f"{result.name}: {rules}"
    # Light rules, as `status`'s analysis table: a boxed table leaves too little of 80 columns.
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    regression = f"{traffic.regression:g}x"
    for column in (
        "Step",
        "What",
        "Cand.\nreq/s",
        "False\nrollback",
        f"Catches\n{regression}",
        "Caught\nafter",
        "Step\ntakes",
    ):
        table.add_column(column, overflow="fold")
    for step, weight in zip(result.steps, step_shares(spec), strict=True):
        label = step_label(spec.steps[step.index].model_dump(by_alias=True, exclude_none=True))
        table.add_row(
            str(step.index),
            label,
            f"{traffic.requests_per_second * weight:.3g}",
            _percent(step.false_rollback),
            _percent(step.caught),
            _duration(step.median_caught_after),
            _duration(step.median_duration),
        )
    table.add_section()
    promoted = f"{_duration(result.median_promoted_after)} ({_percent(result.promoted)})"
    table.add_row(
        "all",
        f"waiting {_percent(result.waiting)}",
        "",
        _percent(result.false_rollback),
        _percent(result.caught),
        _duration(result.median_caught_after),
        promoted,
    )
    return table


def _percent(share: float) -> str:
    return f"{100 * share:.3g}%"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


def as_json(
    traffic: Traffic,
    results: Sequence[Figures],
    unplanned: Sequence[Unplanned],
    exempt: str | None,
    zero_errors: Sequence[ZeroErrorPass] = (),
    latencies: Sequence[LatencyEstimate] = (),
) -> dict[str, Any]:
    return {
        "traffic": asdict(traffic),
        "exempt": exempt,
        "figures": [asdict(result) for result in results],
        "notPlanned": [asdict(skipped) for skipped in unplanned],
        "zeroErrorPass": [asdict(passing) for passing in zero_errors],
        "latencyForm": [asdict(estimate) for estimate in latencies],
    }


@dataclass(frozen=True)
class ZeroErrorPass:
    """When a service without errors on either side first passes a metric's margin, at the first
    step's traffic: the candidate requests and seconds (None: never, a ratio margin; 0: no margin)."""

    metric: str
    candidate_requests: float | None
    seconds: float | None


def zero_error_passes(
    spec: ModelRolloutSpec, planned: Sequence[MetricSpec], traffic: Traffic
) -> list[ZeroErrorPass]:
    """Per planned metric with a sequential test, by core/counted.py's `zero_event_pass` (as
    docs/statistics.md's table): looked at every interval, after the first evaluation's baseline."""
    assert spec.analysis is not None
    interval = spec.analysis.interval_timedelta.total_seconds()
    share = next((w for w in step_shares(spec) if w > 0), 0.0)
    per_look = traffic.requests_per_second * share * interval
    passes = []
    for metric in planned:
        if metric.sequential is None or per_look <= 0:
            continue
        needed = counted.zero_event_pass(metric.sequential, per_look)
        seconds = None if needed is None else (needed / per_look + 1) * interval if needed else 0.0
        passes.append(ZeroErrorPass(metric.name, needed, seconds))
    return passes


def _zero_error_text(passing: ZeroErrorPass) -> str:
    if passing.seconds is None:
        return (
            f"without errors: {passing.metric} never passes (a ratio margin is not shown from 0 events; "
            "the step pauses at progressDeadlines.inconclusive: set marginIncrease)"
        )
    return (
        f"without errors: {passing.metric} passes its first step after "
        f"{passing.candidate_requests:,.0f} candidate requests, {_duration(passing.seconds)}"
    )
