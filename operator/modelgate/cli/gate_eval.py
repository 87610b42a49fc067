"""`modelgate eval`: the built-in gate check (docs/gate-eval.md)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from modelgate.api.duration import parse_duration
from modelgate.api.gate_result import GateResult
from modelgate.api.gate_shard import COMPLETION_INDEX_ENV, MAX_SHARDS
from modelgate.api.object_url import shard_results_file
from modelgate.cli.exit_codes import ExitCode
from modelgate.cli.gate_eval_recorded import add_recorded_replay_options, recorded_source
from modelgate.cli.loopback import add_loopback_option
from modelgate.core.gate_scores import side_requests, silence_text, silent_sides
from modelgate.egress import policy_from_environment
from modelgate.evaluator.item_results import ItemResults
from modelgate.evaluator.jsonl import InputError
from modelgate.evaluator.model_client import Endpoint, RequestPolicy, Sources, Unreachable
from modelgate.evaluator.result import ResultTooLarge, failure_result, result_json, shard_json
from modelgate.evaluator.runner import NoProgress, Plan, Shard, evaluate, evaluate_shard
from modelgate.evaluator.runner import Progress as ProgressSink
from modelgate.evaluator.storage_failure import ResultsNotStored
from modelgate.evaluator.storage_io import write_results
from modelgate.evaluator.summary import summary_text
from modelgate.observability import configure_logging


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "eval",
        help="score a candidate model against the incumbent: test set, replay, blind pairwise judge",
        description="Asks two OpenAI-compatible endpoints the items of a test set and replayed "
        "requests, and a third one, the judge, which answer of each pair is better; writes a "
        "GateResult (JSON) and a summary.",
    )
    parser.add_argument(
        "--candidate", required=True, metavar="URL", help="base URL, e.g. http://host:8000/v1"
    )
    parser.add_argument("--incumbent", required=True, metavar="URL", help="base URL of the model in service")
    parser.add_argument("--candidate-model", metavar="NAME", help="the model field sent to the candidate")
    parser.add_argument("--incumbent-model", metavar="NAME", help="the model field sent to the incumbent")
    parser.add_argument(
        "--test-set", metavar="PATH_OR_URL", help="test set JSONL (a file, an http(s) URL or s3://bucket/key)"
    )
    parser.add_argument("--replay", metavar="PATH_OR_URL", help="recorded requests JSONL")
    parser.add_argument(
        "--replay-sample",
        type=_positive,
        metavar="N",
        help="replay N requests drawn with --seed (default: all)",
    )
    add_recorded_replay_options(parser)
    parser.add_argument("--judge", metavar="URL", help="base URL of the judge model")
    parser.add_argument("--judge-model", metavar="NAME", help="the model field sent to the judge")
    parser.add_argument(
        "--judge-samples",
        type=_positive,
        metavar="N",
        help="judge the pairs of N prompts drawn with --seed among all (default: all); a pair one "
        "model did not answer is left out",
    )
    _add_request_options(parser)
    parser.add_argument("--seed", type=int, default=0, help="for the samples and the judge's order")
    parser.add_argument(
        "--inputs-within",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="a test set or replay file must resolve inside one of these directories (repeatable; "
        "a gate Job names its volumes' mounts)",
    )
    add_loopback_option(parser)
    _add_outputs(parser)
    _add_shards(parser)
    parser.set_defaults(handler=run_eval)


def _add_request_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--concurrency",
        type=_positive,
        default=8,
        help="requests in flight per endpoint (default: %(default)s)",
    )
    parser.add_argument(
        "--timeout", type=_seconds, default="30s", help="per attempt, e.g. 30s or 2m (default: %(default)s)"
    )
    parser.add_argument(
        "--retries", type=_non_negative, default=2, help="attempts after a failed one (default: %(default)s)"
    )


def _add_outputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--result-file", type=Path, metavar="PATH", help="GateResult JSON, e.g. /dev/termination-log in a Job"
    )
    parser.add_argument("--summary-file", type=Path, metavar="PATH", help="the summary (default: stdout)")
    parser.add_argument(
        "--results",
        metavar="S3_LOCATION",
        help="write the full per-item results to S3_LOCATION/<test-set version>/results.jsonl "
        "(s3://bucket/prefix; credentials from $MODELGATE_RESULTS_S3_* or $AWS_*; a shard of "
        "--shards=N writes results-<index>-of-N.jsonl there); the result then points at them, and "
        "a failed write means the run could not measure",
    )


def _add_shards(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--shards",
        type=_shard_count,
        default=1,
        metavar="N",
        help=f"do only shard ${COMPLETION_INDEX_ENV} of N (an Indexed Job's index) and write its counts "
        "for the operator to add up (default: %(default)s, the whole run)",
    )


def run_eval(args: argparse.Namespace) -> int:
    if (refused := _refused(args)) is not None:
        print(f"modelgate eval: {refused}", file=sys.stderr)
        return ExitCode.USAGE
    configure_logging("console", logging.WARNING, stream=sys.stderr)
    plan = Plan(
        candidate=Endpoint("candidate", args.candidate, args.candidate_model),
        incumbent=Endpoint("incumbent", args.incumbent, args.incumbent_model),
        policy=RequestPolicy(args.concurrency, args.timeout, args.retries),
        # Loopback only with --allow-loopback or $MODELGATE_ALLOW_LOOPBACK (a local bed, a run by hand).
        sources=Sources(policy_from_environment([], os.environ), tuple(args.inputs_within), os.environ),
        test_set=args.test_set,
        replay=args.replay,
        replay_sample=args.replay_sample,
        replay_recorded=recorded_source(args),
        judge=Endpoint("judge", args.judge, args.judge_model) if args.judge else None,
        judge_samples=args.judge_samples,
        seed=args.seed,
        shard=_shard(args.shards),
    )
    if plan.shard.count > 1:
        return _run_shard(plan, args.result_file, args.results)
    try:
        with _progress() as progress:
            items = ItemResults()
            result = asyncio.run(evaluate(plan, progress, items))
        if args.results:
            stored = write_results(args.results, items, result, plan.sources.egress, environ=os.environ)
            result = result.model_copy(update={"results_url": asyncio.run(stored)})
        text = result_json(result)
    except (InputError, Unreachable, ResultTooLarge, ResultsNotStored) as error:
        print(f"modelgate eval: {error}", file=sys.stderr)
        _write(args.result_file, "--result-file", result_json(failure_result(error)))
        return ExitCode.ERROR
    _write(args.result_file, "--result-file", text)
    summary = summary_text(result)
    if args.summary_file is None:
        sys.stdout.write(summary)
    _write(args.summary_file, "--summary-file", summary)
    return _answered_code(result)


def _answered_code(result: GateResult) -> int:
    """NO_ANSWER, saying which side, when a side answered none of its requests: its scores count
    every request as a wrong answer and measure its endpoint, not its model."""
    silent = silent_sides(result.requests)
    if result.requests is None or not silent:
        return ExitCode.OK
    for side in silent:
        print(f"modelgate eval: {silence_text(side, side_requests(result.requests, side))}", file=sys.stderr)
    return ExitCode.NO_ANSWER


def _run_shard(plan: Plan, result_file: Path | None, results: str | None) -> int:
    """One shard: its counts (api/gate_shard.py) to the result file, for the operator to add up, and
    its own items' full results (`results`: the --results location) to storage."""
    try:
        items = ItemResults()
        counted = asyncio.run(evaluate_shard(plan, NoProgress(), items))
        if results:
            file = shard_results_file(plan.shard.index, plan.shard.count)
            stored = write_results(results, items, counted, plan.sources.egress, file, environ=os.environ)
            counted = counted.model_copy(update={"results_url": asyncio.run(stored)})
        text = shard_json(counted)
    except (InputError, Unreachable, ResultTooLarge, ResultsNotStored) as error:
        print(f"modelgate eval: shard {plan.shard.index}: {error}", file=sys.stderr)
        _write(result_file, "--result-file", result_json(failure_result(error)))
        return ExitCode.ERROR
    _write(result_file, "--result-file", text)
    # A side silent in one shard may have answered in others: the operator judges the counts added up.
    return ExitCode.OK


def _refused(args: argparse.Namespace) -> str | None:
    """What is wrong with a command line argparse took (options that only go together), if anything."""
    prompts = args.test_set or args.replay or args.replay_recorded
    if not (prompts or args.judge):
        return "give at least one of --test-set, --replay, --judge"
    if args.replay and args.replay_recorded:
        return "give --replay or --replay-recorded, not both"
    if args.judge and not prompts:
        return "--judge compares answers to --test-set or --replay prompts; give one"
    return None


def _shard(count: int) -> Shard:
    """This process's shard: the index the Job controller gives each Pod of an Indexed Job."""
    if count == 1:
        return Shard()
    given = os.environ.get(COMPLETION_INDEX_ENV, "")
    if not given.isdigit() or int(given) >= count:
        raise SystemExit(
            f"modelgate eval: --shards={count} needs ${COMPLETION_INDEX_ENV} set to 0 to {count - 1}, "
            f"got {given!r}"
        )
    return Shard(int(given), count)


def _write(path: Path | None, option: str, text: str) -> None:
    if path is None:
        return
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as error:
        raise SystemExit(f"modelgate eval: {option} {path}: {error.strerror or error}") from None


class _RichProgress:
    def __init__(self, progress: Progress) -> None:
        self._progress = progress

    def phase(self, description: str, total: int) -> Callable[[], None]:
        task = self._progress.add_task(description, total=total)
        return lambda: self._progress.advance(task)


@contextmanager
def _progress() -> Iterator[ProgressSink]:
    """A progress bar on standard error when it is a terminal; nothing otherwise (a Job's log)."""
    console = Console(stderr=True)
    if not console.is_terminal:
        yield NoProgress()
        return
    columns = (TextColumn("{task.description:<9}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        yield _RichProgress(progress)


def _positive(text: str) -> int:
    number = int(text)
    if number < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be at least 1")
    return number


def _shard_count(text: str) -> int:
    number = _positive(text)
    if number > MAX_SHARDS:
        raise argparse.ArgumentTypeError(f"{text}: must be at most {MAX_SHARDS}")
    return number


def _non_negative(text: str) -> int:
    number = int(text)
    if number < 0:
        raise argparse.ArgumentTypeError(f"{text}: must be 0 or more")
    return number


def _seconds(text: str) -> float:
    try:
        seconds = parse_duration(text).total_seconds()
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"{text}: must be more than 0")
    return seconds
