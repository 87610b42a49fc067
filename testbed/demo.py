"""`make demo`: the whole story on the local control plane, served by parts no one here wrote.

The operator runs as a process. Four versions of a chat model are Deployments whose Pods llm-d's
vLLM simulator serves (each with its container's arguments), behind an HTTPRoute that Traefik, a
real Gateway API data plane, serves; 50 requests a second go to Traefik. Act 1 promotes a good
candidate step by step; act 2 rolls back one that fails 10% of its requests (counted at the
gateway); act 3 rolls back one whose first token comes 3x later than the incumbent's, although its
end-to-end latency stays within its bound. A live view shows each rollout as it goes, and a summary
closes the story. Everything listens on loopback addresses.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config
from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import ModelRolloutStatus, Phase
from modelgate.cli.render.rollout import render_status
from testbed.demo_serving import SERVING, serve, serving_documents, start_gateway
from testbed.fleet import ModelFleet
from testbed.localcluster import LocalCluster
from testbed.manifests import GATEWAY_GROUP, GATEWAY_VERSION
from testbed.operator_process import OperatorProcess
from testbed.traffic_driver import BackgroundTraffic, TrafficStats, gateway_driver, parse_backend_weights

EXAMPLES = SERVING.parent
NAMESPACE = "demo"
FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)
ACT_TIMEOUT = 300.0
RPS = 50


@dataclass(frozen=True)
class Act:
    title: str
    manifest: str  # in examples/demo/
    expected: Phase


ACTS = (
    Act("Act 1: chat-v2, a good candidate", "rollout-good.yaml", Phase.SUCCEEDED),
    Act("Act 2: chat-v3, 10% server errors", "rollout-failing.yaml", Phase.ROLLED_BACK),
    Act("Act 3: chat-v4, first token 3x later", "rollout-slow-start.yaml", Phase.ROLLED_BACK),
)


@dataclass
class ActResult:
    title: str
    candidate: str
    phase: str
    seconds: float
    detail: str


class Demo:
    def __init__(self, bed: LocalCluster, console: Console) -> None:
        self.bed = bed
        self.console = console
        self.api_client: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(bed.kubeconfig)
        )
        self.objects = client.CustomObjectsApi(self.api_client)

    def kubectl_apply(self, documents: list[dict[str, Any]]) -> None:
        self.bed.kubectl("apply", "-n", NAMESPACE, "-f", "-", stdin=yaml.safe_dump_all(documents))

    def rollout_manifest(self, example: str) -> dict[str, Any]:
        manifest: dict[str, Any] = yaml.safe_load((EXAMPLES / example).read_text())
        manifest["spec"]["analysis"]["prometheus"]["address"] = self.bed.prometheus_url
        return manifest

    def rollout(self) -> dict[str, Any]:
        body: Any = self.objects.get_namespaced_custom_object(
            API_GROUP, API_VERSION, NAMESPACE, PLURAL, "chat"
        )
        return dict(body)

    def live_route(self) -> tuple[int, int] | None:
        route: Any = self.objects.get_namespaced_custom_object(
            GATEWAY_GROUP, GATEWAY_VERSION, NAMESPACE, "httproutes", "chat"
        )
        weights = parse_backend_weights(route)
        spec: Any = self.rollout()["spec"]["trafficRouting"]["gatewayAPI"]
        if spec["incumbentBackend"] in weights and spec["candidateBackend"] in weights:
            return weights[spec["incumbentBackend"]], weights[spec["candidateBackend"]]
        return None

    def route_to(self, incumbent: str, candidate: str) -> None:
        """The route's rule names the next rollout's two backends: all traffic to the incumbent."""
        route = next(d for d in serving_documents() if d["kind"] == "HTTPRoute")
        route["spec"]["rules"][0]["backendRefs"] = [
            {"name": incumbent, "port": 8000, "weight": 100},
            {"name": candidate, "port": 8000, "weight": 0},
        ]
        self.kubectl_apply([route])

    def watch_act(self, act: Act) -> ActResult:
        self.console.rule(f"[bold]{act.title}")
        manifest = self.rollout_manifest(act.manifest)
        spec = manifest["spec"]
        self.route_to(spec["incumbent"]["deployment"], spec["candidate"]["deployment"])
        started = time.monotonic()
        self.kubectl_apply([manifest])
        steps = len(spec["steps"])
        progress = Progress(
            TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed:.0f}/{task.total:.0f}")
        )
        step_bar = progress.add_task("steps", total=steps)
        weight_bar = progress.add_task("candidate weight %", total=100)
        candidate = spec["candidate"]["deployment"]
        status = ModelRolloutStatus()
        with Live(console=self.console, refresh_per_second=4) as live:
            while time.monotonic() - started < ACT_TIMEOUT:
                body = self.rollout()
                status = ModelRolloutStatus.model_validate(body.get("status") or {})
                new_run = status.rollout_candidate == candidate
                progress.update(step_bar, completed=min(status.current_step_index, steps) if new_run else 0)
                progress.update(weight_bar, completed=status.current_weight if new_run else 0)
                live.update(Group(progress, render_status(body, live_weights=self.live_route())))
                if new_run and status.phase in FINISHED:
                    break
                time.sleep(0.25)  # a screen refresh, not synchronisation
        if not self.console.is_terminal:
            self.console.line()  # Live leaves a file's last line unended
        reason = status.rollback_reason
        detail = reason.message if reason else (status.message or "")
        return ActResult(act.title, candidate, str(status.phase), time.monotonic() - started, detail)


def summary(results: list[ActResult], stats: TrafficStats) -> Group:
    """A table narrow enough for 80 columns, then each act's reason as a paragraph of its own."""
    table = Table(title="What happened", title_justify="left")
    for column in ("Act", "Candidate", "Outcome", "Took"):
        table.add_column(column, no_wrap=True)
    for number, result in enumerate(results, start=1):
        style = "green" if result.phase == Phase.SUCCEEDED else "red"
        table.add_row(
            str(number), result.candidate, f"[{style}]{result.phase}[/{style}]", f"{result.seconds:.0f}s"
        )
    answered = ", ".join(f"HTTP {code}: {count}" for (_, code), count in sorted(stats.responses.items()))
    lost = sum(stats.failed.values())
    reasons = [f"Act {number}: {result.detail}" for number, result in enumerate(results, start=1)]
    traffic = f"Requests through Traefik during the demo: {answered}; no answer: {lost}."
    return Group(table, *reasons, traffic)


def run(root: Path, console: Console) -> int:
    bed = LocalCluster(root)
    started_here = not bed.is_up()
    if started_here:
        console.print(
            f"[bold]Starting the local control plane in {root}[/bold]: etcd, kube-apiserver, "
            "controller-manager, scheduler, kwok and Prometheus"
        )
        bed.up()
    demo = Demo(bed, console)
    operator = OperatorProcess(bed.kubeconfig, bed.layout.root / "demo-operator")
    fleet = ModelFleet(bed, demo.api_client)
    traefik = start_gateway(bed, demo.api_client)
    try:
        serve(bed, demo.api_client, fleet, traefik, NAMESPACE)
        console.print(
            "Deployments chat-v1 to chat-v4 run on kwok's fake nodes; llm-d's vLLM simulator serves "
            "each Pod on its loopback IP (chat-v3 fails 10% of requests, chat-v4 answers its first "
            f"token 3x later). Traefik serves HTTPRoute chat at {traefik.url}."
        )
        operator.start()
        console.print(f"modelgate is running (logs: {operator.log_file}); {RPS} requests/s go to Traefik.")
        with BackgroundTraffic(gateway_driver(traefik.url, rps=RPS)) as traffic:
            results = [demo.watch_act(act) for act in ACTS]
            console.print(summary(results, traffic.stop()))
        return 0 if [r.phase for r in results] == [act.expected for act in ACTS] else 1
    finally:
        operator.stop()
        fleet.stop()
        traefik.stop()
        if started_here:
            bed.down()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.demo", description=__doc__)
    parser.add_argument("--root", type=Path, default=Path(".localcluster"), help="the bed's state folder")
    args = parser.parse_args(argv)
    return run(args.root, Console())


if __name__ == "__main__":
    sys.exit(main())
