"""What one write costs the bed's kube-apiserver: ModelRollout status patches, as the operator sends
them, against HTTPRoute weight patches and Event creates, with the API server's CPU profile of each.

`python -m bench.apiserver_writes --objects 300 --seconds 30` starts a bed with the API server's
profiler on (testbed.localcluster.API_SERVER_PROFILING_ENV), or reuses the one up in --root, creates
--objects rollouts and routes in a fresh namespace, then for each kind of write sends them from
--threads threads for --seconds, each thread on objects of its own, and reports per kind the
requests per second answered, the mean round trip, and the CPU seconds kube-apiserver and etcd
spent per request (from /proc); the CPU profile taken meanwhile is saved beside the JSON, and its
top entries (`go tool pprof -top -cum`) printed. Run it under `flock /tmp/modelgate-bench.lock`:
other runs on the machine change every number here."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import urllib3

from bench.process_usage import cpu_seconds
from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api.metric_status import AnalysisSample, MetricAnalysis
from modelgate.api.status import (
    Condition,
    ConditionStatus,
    ModelRolloutStatus,
    Phase,
)
from modelgate.api.statusmodel import Verdict
from modelgate.kube.objects import event_body
from testbed.binaries import binary
from testbed.localcluster import API_SERVER_PROFILING_ENV, LocalCluster
from testbed.manifests import GATEWAY_GROUP, GATEWAY_VERSION, http_route, model_rollout

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
QUERY = (
    'sum(rate(http_requests_total{namespace="bench",pod=~"r1-v2-[a-z0-9]+-[a-z0-9]+",code=~"5.."}[10s])) / '
    'sum(rate(http_requests_total{namespace="bench",pod=~"r1-v2-[a-z0-9]+-[a-z0-9]+"}[10s]))'
)
Write = Callable[[int, int], tuple[str, str, bytes, str]]  # (object, sequence) -> method, path, body, type


@dataclass(frozen=True)
class Api:
    """Plain HTTPS to the bed's API server as its admin: the client's own CPU stays small beside the
    kubernetes client's, on the same 2 cores as the server it measures."""

    url: str
    pool: urllib3.PoolManager

    @classmethod
    def of(cls, bed: LocalCluster, connections: int) -> Api:
        pki = bed.layout.pki
        pool = urllib3.PoolManager(
            maxsize=connections,
            cert_reqs="CERT_REQUIRED",
            ca_certs=str(pki / "ca.crt"),
            cert_file=str(pki / "admin.crt"),
            key_file=str(pki / "admin.key"),
        )
        return cls(bed.api_server_url, pool)

    def send(
        self, method: str, path: str, body: bytes | None = None, content_type: str = "application/json"
    ) -> Any:
        response = self.pool.request(
            method, self.url + path, body=body, headers={"Content-Type": content_type}, timeout=60.0
        )
        if response.status >= 300:
            raise RuntimeError(f"{method} {path}: {response.status} {response.data[:300]!r}")
        return response.data


def rollout_status(index: int, sequence: int) -> dict[str, Any]:
    """A Progressing rollout's status after `sequence` evaluations of one metric, as the operator
    writes it (the whole status as a merge patch, `to_patch`)."""
    start = datetime(2026, 12, 3, tzinfo=UTC)
    at = start + timedelta(seconds=10 * sequence)
    history = tuple(
        AnalysisSample(time=at - timedelta(seconds=10 * k), value=0.001 * (k % 3), verdict=Verdict.PASS)
        for k in reversed(range(min(sequence + 1, 10)))
    )
    metric = MetricAnalysis(
        name="error-rate",
        verdict=Verdict.PASS,
        time=at,
        value=0.001 * (sequence % 3),
        query=QUERY.replace("r1-", f"r{index}-"),
        history=history,
    )
    conditions = tuple(
        Condition(
            type=kind,
            status=ConditionStatus.TRUE,
            reason=reason,
            message=message,
            last_transition_time=start,
            observed_generation=1,
        )
        for kind, reason, message in (
            ("Ready", "Progressing", "step 2 of 4: weight 50"),
            ("CandidateAvailable", "Available", f"r{index}-v2: 1 of 1 replicas available"),
            ("RouteReady", "WeightsSet", "candidate weight 50"),
        )
    )
    status = ModelRolloutStatus(
        phase=Phase.PROGRESSING,
        message="step 2 of 4: pause 20s, analysis every 10s",
        observed_generation=1,
        rollout_candidate=f"r{index}-v2",
        current_step_index=1 + sequence % 3,
        current_weight=50,
        live_weight=50,
        step_started_at=start,
        last_analysis_at=at,
        analysis=(metric,),
        conditions=conditions,
    )
    return status.to_patch()


def status_patch(namespace: str) -> Write:
    def write(index: int, sequence: int) -> tuple[str, str, bytes, str]:
        path = f"/apis/{API_GROUP}/{API_VERSION}/namespaces/{namespace}/{PLURAL}/r{index}/status"
        body = json.dumps({"status": rollout_status(index, sequence)}).encode()
        return "PATCH", f"{path}?fieldManager=modelgate", body, MERGE_PATCH

    return write


def route_patch(namespace: str) -> Write:
    """The weight write the operator makes (routers/patched.py), less its resourceVersion test."""

    def write(index: int, sequence: int) -> tuple[str, str, bytes, str]:
        path = f"/apis/{GATEWAY_GROUP}/{GATEWAY_VERSION}/namespaces/{namespace}/httproutes/r{index}"
        weight = 10 + sequence % 80
        operations = [
            {"op": "replace", "path": "/spec/rules/0/backendRefs/0/weight", "value": 100 - weight},
            {"op": "replace", "path": "/spec/rules/0/backendRefs/1/weight", "value": weight},
        ]
        return "PATCH", f"{path}?fieldManager=modelgate", json.dumps(operations).encode(), JSON_PATCH

    return write


def event_create(namespace: str) -> Write:
    def write(index: int, sequence: int) -> tuple[str, str, bytes, str]:
        involved = {
            "apiVersion": f"{API_GROUP}/{API_VERSION}",
            "kind": "ModelRollout",
            "metadata": {"name": f"r{index}", "namespace": namespace, "uid": str(uuid.UUID(int=index))},
        }
        body = event_body(
            involved,
            "Normal",
            "StepCompleted",
            f"step {sequence} completed; weight set to 50",
            action="Progress",
            instance="bench",
        )
        return (
            "POST",
            f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
            json.dumps(body).encode(),
            "application/json",
        )

    return write


WRITES: dict[str, Callable[[str], Write]] = {
    "status": status_patch,
    "route": route_patch,
    "event": event_create,
}


def create_objects(api: Api, namespace: str, count: int, prometheus: str, threads: int) -> None:
    api.send("POST", "/api/v1/namespaces", json.dumps({"metadata": {"name": namespace}}).encode())

    def create(index: int) -> None:
        route = http_route(f"r{index}", namespace, {"chat-v1": 100, "chat-v2": 0})
        api.send(
            "POST",
            f"/apis/{GATEWAY_GROUP}/{GATEWAY_VERSION}/namespaces/{namespace}/httproutes",
            json.dumps(route).encode(),
        )
        rollout = model_rollout(
            f"r{index}",
            namespace,
            steps=[{"setWeight": 10}, {"pause": {"duration": "20s"}}, {"setWeight": 50}],
            prometheus=prometheus,
            metrics=[{"name": "error-rate", "preset": "errorRate", "max": 0.01}],
            incumbent=f"r{index}-v1",
            candidate=f"r{index}-v2",
            route=f"r{index}",
            interval="10s",
        )
        api.send(
            "POST",
            f"/apis/{API_GROUP}/{API_VERSION}/namespaces/{namespace}/{PLURAL}",
            json.dumps(rollout).encode(),
        )
        method, path, body, content_type = status_patch(namespace)(index, 0)
        api.send(method, path, body, content_type)

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(create, range(count)))


@dataclass
class Tally:
    requests: int = 0
    seconds: float = 0.0

    def add(self, seconds: float) -> None:
        self.requests += 1
        self.seconds += seconds


def hammer(api: Api, write: Write, count: int, threads: int, seconds: float) -> Tally:
    """Each thread writes its own objects (index = thread mod threads) in turn until the deadline."""
    deadline = time.monotonic() + seconds
    tallies = [Tally() for _ in range(threads)]

    def run(thread: int) -> None:
        sequence = 1
        while time.monotonic() < deadline:
            for index in range(thread, count, threads):
                method, path, body, content_type = write(index, sequence)
                started = time.monotonic()
                api.send(method, path, body, content_type)
                tallies[thread].add(time.monotonic() - started)
                if time.monotonic() >= deadline:
                    return
            sequence += 1

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(run, range(threads)))
    return Tally(sum(t.requests for t in tallies), sum(t.seconds for t in tallies))


def pid_of(bed: LocalCluster, name: str) -> int:
    return next(p.pid for p in bed.processes.load() if p.name == name)


def profile_top(profile: Path, lines: int = 45) -> str:
    top = subprocess.run(
        [
            "go",
            "tool",
            "pprof",
            "-top",
            "-cum",
            f"-nodecount={lines}",
            str(binary("kube-apiserver")),
            str(profile),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return top.stdout


def measure(
    bed: LocalCluster, api: Api, kind: str, namespace: str, args: argparse.Namespace, out: Path
) -> dict[str, Any]:
    write = WRITES[kind](namespace)
    server, etcd = pid_of(bed, "kube-apiserver"), pid_of(bed, "etcd")
    profile = out / f"{kind}.pprof"
    profiling_seconds = max(int(args.seconds) - 4, 1)

    def take_profile() -> None:
        # Starts 2 s into the window, so it samples the steady state only.
        time.sleep(2)
        profile.write_bytes(api.send("GET", f"/debug/pprof/profile?seconds={profiling_seconds}"))

    profiler = threading.Thread(target=take_profile)
    before = (cpu_seconds(server), cpu_seconds(etcd), os.times())
    started = time.monotonic()
    profiler.start()
    tally = hammer(api, write, args.objects, args.threads, args.seconds)
    window = time.monotonic() - started
    after = (cpu_seconds(server), cpu_seconds(etcd), os.times())
    profiler.join()
    client_cpu = (after[2].user + after[2].system) - (before[2].user + before[2].system)
    result = {
        "kind": kind,
        "requests": tally.requests,
        "requests_per_second": tally.requests / window,
        "round_trip_ms": 1000 * tally.seconds / max(tally.requests, 1),
        "apiserver_cpu_ms_per_request": 1000 * (after[0] - before[0]) / max(tally.requests, 1),
        "etcd_cpu_ms_per_request": 1000 * (after[1] - before[1]) / max(tally.requests, 1),
        "client_cpu_ms_per_request": 1000 * client_cpu / max(tally.requests, 1),
        "apiserver_cores": (after[0] - before[0]) / window,
        "sample_body_bytes": len(write(0, 1)[2]),
    }
    print(json.dumps(result))
    print(profile_top(profile))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path("/tmp/modelgate-apiserver-writes"))
    parser.add_argument("--objects", type=int, default=300)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--kinds", default=",".join(WRITES))
    parser.add_argument(
        "--namespace",
        help="write the objects a previous run made there (each new set grows the server's heap)",
    )
    parser.add_argument("--out", type=Path, default=Path("bench/results/apiserver-writes"))
    parser.add_argument("--keep", action="store_true", help="leave the bed up for another run")
    args = parser.parse_args()

    bed = LocalCluster(args.root)
    started_here = not bed.is_up()
    if started_here:
        os.environ[API_SERVER_PROFILING_ENV] = "1"
        bed.up()
    try:
        api = Api.of(bed, args.threads + 2)
        namespace = args.namespace or f"writes-{uuid.uuid4().hex[:6]}"
        if args.namespace is None:
            create_objects(api, namespace, args.objects, bed.prometheus_url, args.threads)
        print(json.dumps({"namespace": namespace}))
        args.out.mkdir(parents=True, exist_ok=True)
        results = [measure(bed, api, kind, namespace, args, args.out) for kind in args.kinds.split(",")]
        (args.out / "results.json").write_text(json.dumps(results, indent=2))
    finally:
        if started_here and not args.keep:
            bed.down()


if __name__ == "__main__":
    main()
