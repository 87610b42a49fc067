"""`modelgate run`: start the operator."""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import math
import os
import socket
import sys
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Executor, ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import kopf
import structlog
from prometheus_client import start_http_server

from modelgate import API_GROUP, API_VERSION, PLURAL, __version__
from modelgate.cli.loopback import add_loopback_option
from modelgate.cli.target import LOG_FORMAT_HELP
from modelgate.core.stepping import MAX_STATUS_HOLD, RESYNC
from modelgate.egress import evaluator_environment, loopback_allowed, policy_from_environment, token_allowlist
from modelgate.kube import Kube, KubeError, Object
from modelgate.kube.check_pod_policy import CheckPodPolicy
from modelgate.kube.connection import limit_requests
from modelgate.kube.evaluation_jobs import EvaluationJobs
from modelgate.kube.gate_jobs import EVALUATOR_IMAGE_ENV
from modelgate.kube.request_rate import RateSizing, RequestRate
from modelgate.modelevaluation.loops import EvaluationLoops
from modelgate.modelevaluation.reconciler import EvaluationReconciler
from modelgate.notifications import NotificationDefaults
from modelgate.observability import configure_logging
from modelgate.operator_config import OperatorConfig
from modelgate.peering import Peering, PeeringStandby, StandbyReason, seniority_priority
from modelgate.reconciler import Reconciler
from modelgate.rollout_loops import RolloutLoops
from modelgate.routers.watched import route_resources
from modelgate.tick_threads import DEFAULT_WORKERS, THREADS_PER_WORKER, TickThreads

# `--log-level`'s names (the chart's logLevel) and what they filter at.
LOG_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warning": logging.WARNING,
    "error": logging.ERROR,
}


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    run = commands.add_parser("run", help="start the operator")
    scope = run.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", action="append", help="watch this namespace (repeatable)")
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="watch every namespace (default)")
    run.add_argument(
        "--kubeconfig", type=Path, help="default: in-cluster, then $KUBECONFIG or ~/.kube/config"
    )
    run.add_argument(
        "--metrics-address", default="127.0.0.1:8080", help="HOST:PORT of /metrics (0 port: off)"
    )
    run.add_argument(
        "--health-address", default="127.0.0.1:8081", help="HOST:PORT of the liveness probe /healthz"
    )
    _add_tuning_options(run)
    run.add_argument(
        "-l",
        "--selector",
        help="handle only the ModelRollouts with these labels (a label selector, e.g. modelgate.io/shard=a)",
    )
    run.add_argument(
        "--peering",
        metavar="NAME",
        help="run as one of several replicas: kopf's peering object NAME (a ClusterKopfPeering, or with "
        "-n a KopfPeering in each namespace) lets the oldest live replica act (default: standalone)",
    )
    run.add_argument(
        "--peering-lifetime",
        type=int,
        default=60,
        metavar="SECONDS",
        help="how long a replica that stopped renewing its peering record is taken as alive",
    )
    run.add_argument(
        "--identity",
        default=socket.gethostname(),
        help="this replica's name in Events (reportingInstance) and in the peering object; unique per "
        "replica (default: the host name, the pod's name in a pod)",
    )
    add_loopback_option(run)
    run.add_argument("--log-format", choices=["json", "console"], default="json", help=LOG_FORMAT_HELP)
    run.add_argument("--log-level", choices=LOG_LEVELS, default="info", help="the least severe lines logged")
    run.add_argument("--verbose", action="store_true", help="debug logs (--log-level=debug)")
    run.set_defaults(handler=run_operator)


def _add_tuning_options(run: argparse.ArgumentParser) -> None:
    """How many ticks run at once and how soon they look again."""
    run.add_argument(
        "--workers",
        type=int,
        default=DEFAULT_WORKERS,
        help="ticks that run at once, each in a thread; their waits on the API server and Prometheus "
        "overlap (with ticks parked on a server that does not answer, up to 4 times as many threads)",
    )
    run.add_argument(
        "--status-hold",
        type=float,
        default=MAX_STATUS_HOLD.total_seconds(),
        metavar="SECONDS",
        help="how long a status change that may wait (an evaluation that changed no verdict or count, a "
        "verified weight) is held in memory before it is written; 0 writes every change at once",
    )
    run.add_argument(
        "--api-qps",
        type=_positive_float,
        metavar="QPS",
        help="the most API requests a second the operator sends, after a burst (default: sized from "
        "the rollouts and evaluations it handles, docs/scaling.md)",
    )
    run.add_argument(
        "--api-burst",
        type=_positive_int,
        metavar="REQUESTS",
        help="how many API requests may leave at once before --api-qps paces them (default: two "
        "seconds of the rate)",
    )
    run.add_argument(
        "--route-recheck",
        type=_positive_seconds,
        default=RESYNC.total_seconds(),
        metavar="SECONDS",
        help="how soon after its last tick a rollout looks again when its route changed; a finished "
        "rollout sets its weights right then (lower: another writer is answered sooner)",
    )


# After SIGTERM, how long ticks still running (a thread blocked on a server that does not answer) may
# hold the process: past it, it exits without them. A tick interrupted so is no worse than one
# interrupted by a crash: the next operator reads the state from the API server and ticks again.
STOP_GRACE = 3.0


def _positive_seconds(text: str) -> float:
    seconds = float(text)
    if not seconds > 0:
        raise argparse.ArgumentTypeError(f"expected seconds above 0, got {text}")
    return seconds


def _positive_float(text: str) -> float:
    value = float(text)
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"expected a finite number above 0, got {text}")
    return value


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text}")
    return value


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host or "127.0.0.1", int(port)


def startup_fields(args: argparse.Namespace) -> dict[str, object]:
    """What this operator will do, for its first log line: a misconfigured scope shows at once."""
    return {
        "version": __version__,
        "namespaces": args.namespace or "all",
        "selector": args.selector or None,
        "workers": args.workers,
        "route_recheck_seconds": args.route_recheck,
        "api_qps": args.api_qps or "sized from the objects handled",
        "peering": args.peering or None,
        "allow_loopback": loopback_allowed(os.environ),  # the flag or the environment's setting
    }


def log_level(args: argparse.Namespace) -> int:
    return logging.DEBUG if args.verbose else LOG_LEVELS[args.log_level]


def configure_operator_logging(args: argparse.Namespace) -> None:
    level = log_level(args)
    configure_logging(args.log_format, level)
    # kopf's and the client's lines too: at error, their warnings would be the only ones left.
    logging.getLogger().setLevel(max(level, logging.WARNING))


def run_operator(args: argparse.Namespace) -> int:
    configure_operator_logging(args)
    structlog.get_logger("modelgate.run").info("operator starting", **startup_fields(args))
    if args.kubeconfig is not None:
        # kopf's own login reads $KUBECONFIG; the reconciler gets the same file.
        os.environ["KUBECONFIG"] = str(args.kubeconfig)
    from modelgate import handlers  # noqa: F401 - registers the handlers

    metrics_host, metrics_port = _split(args.metrics_address)
    if metrics_port:
        start_http_server(metrics_port, metrics_host)
    kube = Kube.from_kubeconfig(
        args.kubeconfig,
        connections=args.workers,
        reporting_host=args.identity,
        default_kubeconfig=os.environ.get("KUBECONFIG"),
    )
    kube.watch_caches(resource.plural for resource in route_resources())  # fed by the handlers' watches
    settings = kopf.OperatorSettings()
    if args.selector:
        _check_selector(kube, args.selector, args.namespace)
        # Server-side: rollouts outside the selector never reach this operator.
        settings.watching.label_selectors[API_GROUP, API_VERSION, PLURAL] = args.selector
    status_hold = timedelta(seconds=args.status_hold)
    reconciler = Reconciler(
        kube, status_hold=status_hold, config=operator_config(kube.server_url, os.environ)
    )
    priority = standby = None
    if args.peering:
        priority = seniority_priority(datetime.now(UTC))
        settings.peering.lifetime = args.peering_lifetime
        # Pausing and resuming is the one thing an operator of a standby needs to see in its logs.
        logging.getLogger("kopf._core.engines.peering").setLevel(logging.INFO)
        peering = Peering(args.peering, args.identity, priority, clusterwide=not args.namespace)
        standby = PeeringStandby(kube, peering, reconciler.clock).standby_reason
    # Ticks of both kinds run in these threads, handed out by tick_threads.TickThreads.
    executor = ThreadPoolExecutor(max_workers=args.workers * THREADS_PER_WORKER, thread_name_prefix="tick")
    code = 1
    try:
        _run_kopf(args, kube, settings, reconciler, (priority, standby), executor)
        code = 0
    finally:
        # kopf's executor (its synchronous handlers) too: left open, its idle threads held every
        # stop for the whole grace.
        _exit_without_stuck_ticks([executor, settings.execution.executor], code)
    return code


def operator_config(api_server_url: str, environ: Mapping[str, str]) -> OperatorConfig:
    """The operator's settings from its environment (its flags set their variables before this)."""
    return OperatorConfig(
        egress=policy_from_environment([api_server_url], environ),
        token_allowlist=token_allowlist(environ),
        evaluator_image=environ.get(EVALUATOR_IMAGE_ENV),
        evaluator_env=evaluator_environment(api_server_url, environ),
        check_pod_policy=CheckPodPolicy.from_env(environ),
        notification_defaults=NotificationDefaults.from_environment(environ),
    )


def _run_kopf(
    args: argparse.Namespace,
    kube: Kube,
    settings: kopf.OperatorSettings,
    reconciler: Reconciler,
    peering: tuple[int | None, StandbyReason | None],
    executor: ThreadPoolExecutor,
) -> None:
    """`peering`: this replica's priority and why it must stand by, with --peering."""
    health_host, health_port = _split(args.health_address)
    priority, standby = peering
    clock = reconciler.clock
    threads = TickThreads(args.workers)  # one fair share for the ticks of both kinds
    rollouts = RolloutLoops(
        reconciler,
        route_recheck=timedelta(seconds=args.route_recheck),
        threads=threads,
        standby=standby,
        clock=clock,
    )
    evaluations = EvaluationLoops(
        EvaluationReconciler(kube, EvaluationJobs(reconciler.gate_jobs), clock), threads, clock, standby
    )
    sizing = RateSizing(args.api_qps, args.api_burst)
    limit_requests(RequestRate(sizing, lambda: len(rollouts) + len(evaluations)))
    # A loop of our own: asyncio.run would wait, without end, for the threads of ticks still running.
    kopf.run(
        loop=asyncio.new_event_loop(),
        settings=settings,
        standalone=not args.peering,
        peering_name=args.peering,
        priority=priority,
        identity=args.identity,
        clusterwide=not args.namespace,
        namespaces=args.namespace or [],
        liveness_endpoint=f"http://{health_host}:{health_port}/healthz",
        memo=kopf.Memo(
            loops=rollouts,
            evaluations=evaluations,
            kube=kube,
            executor=executor,
            list_rollouts=functools.partial(
                _rollouts_in_scope, kube, args.namespace or [None], args.selector
            ),
        ),
    )


def _exit_without_stuck_ticks(executors: list[Executor], code: int) -> None:
    """Waits up to STOP_GRACE for the tick threads; then, if some still run, exits the process with
    `code` at once (the interpreter's own exit would wait for them without end)."""
    for executor in executors:
        executor.shutdown(wait=False, cancel_futures=True)
    ends = time.monotonic() + STOP_GRACE
    others = [thread for thread in threading.enumerate() if thread is not threading.current_thread()]
    for thread in others:
        if not thread.daemon:
            thread.join(max(ends - time.monotonic(), 0.0))
    stuck = [thread.name for thread in others if thread.is_alive() and not thread.daemon]
    if stuck:
        structlog.get_logger("modelgate.run").warning("exiting with threads still running", threads=stuck)
        logging.shutdown()
        sys.stdout.flush()
        os._exit(code)


def _rollouts_in_scope(kube: Kube, namespaces: list[str | None], selector: str | None) -> list[Object]:
    """What kopf's watch of ModelRollouts lists: the same namespaces (None: all) and label selector."""
    return [
        item
        for namespace in namespaces
        for item in kube.list_custom(API_GROUP, API_VERSION, namespace, PLURAL, label_selector=selector)
    ]


def _check_selector(kube: Kube, selector: str, namespaces: list[str] | None) -> None:
    """The API server parses the selector: a typo fails here, not in every watch request."""
    try:
        namespace = namespaces[0] if namespaces else None
        kube.list_custom(API_GROUP, API_VERSION, namespace, PLURAL, label_selector=selector)
    except KubeError as error:
        if error.status == 400:
            raise SystemExit(f"modelgate run: --selector {selector!r}: {error.message}") from None
        raise
