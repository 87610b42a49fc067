"""`modelgate run`: start the operator."""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path

import kopf
from prometheus_client import start_http_server

from modelgate.loops import RolloutLoops
from modelgate.observability import configure_logging
from modelgate.reconciler import Reconciler


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
    run.add_argument(
        "--workers",
        type=int,
        default=DEFAULT_WORKERS,
        help="threads that run ticks; their waits on the API server and Prometheus overlap",
    )
    run.add_argument("--log-format", choices=["json", "console"], default="json")
    run.add_argument("--verbose", action="store_true", help="debug logs")
    run.set_defaults(handler=run_operator)


# Measured with bench/scale (bench/REPORT.md): enough for 1,000 rollouts at a 10 s interval.
DEFAULT_WORKERS = 16


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host or "127.0.0.1", int(port)


def run_operator(args: argparse.Namespace) -> int:
    configure_logging(args.log_format, logging.DEBUG if args.verbose else logging.INFO)
    if args.kubeconfig is not None:
        # kopf's own login reads $KUBECONFIG; the reconciler gets the same file.
        os.environ["KUBECONFIG"] = str(args.kubeconfig)
    from modelgate import handlers  # noqa: F401 - registers the handlers
    from modelgate.kube import Kube

    metrics_host, metrics_port = _split(args.metrics_address)
    if metrics_port:
        start_http_server(metrics_port, metrics_host)
    health_host, health_port = _split(args.health_address)
    kube = Kube.from_kubeconfig(args.kubeconfig, connections=args.workers)
    kube.watch_caches()  # fed by the handlers' watches
    loops = RolloutLoops(Reconciler(kube))
    kopf.run(
        standalone=True,
        clusterwide=not args.namespace,
        namespaces=args.namespace or [],
        liveness_endpoint=f"http://{health_host}:{health_port}/healthz",
        memo=kopf.Memo(loops=loops, kube=kube, workers=args.workers),
    )
    return 0
