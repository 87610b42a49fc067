"""`make demo`: the whole story on the local control plane.

The operator runs as a process; two model Deployments are served by doubles behind an HTTPRoute
with traffic flowing; a good candidate is promoted step by step; then a bad one (8% errors) is
rolled back. A live view shows each rollout as it goes, and a summary closes the story.
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
from modelgate.cli.render import render_status
from testbed.fleet import ModelFleet
from testbed.localcluster import LocalCluster
from testbed.manifests import GATEWAY_GROUP, GATEWAY_VERSION
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.traffic_driver import BackgroundTraffic, HTTPRouteWatcher, TrafficDriver, parse_backend_weights
from testbed.versions import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"
NAMESPACE = "demo"
FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)
ACT_TIMEOUT = 300.0


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

    def watch_act(self, title: str, manifest: dict[str, Any]) -> ActResult:
        self.console.rule(f"[bold]{title}")
        started = time.monotonic()
        self.kubectl_apply([manifest])
        steps = len(manifest["spec"]["steps"])
        progress = Progress(
            TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed:.0f}/{task.total:.0f}")
        )
        step_bar = progress.add_task("steps", total=steps)
        weight_bar = progress.add_task("candidate weight %", total=100)
        candidate = manifest["spec"]["candidate"]["deployment"]
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
        reason = status.rollback_reason
        detail = reason.message if reason else (status.message or "")
        return ActResult(title, candidate, str(status.phase), time.monotonic() - started, detail)


def summary(results: list[ActResult], traffic: BackgroundTraffic) -> Table:
    table = Table(title="What happened", title_justify="left")
    for column in ("Act", "Candidate", "Outcome", "Took", "Why"):
        table.add_column(column)
    for result in results:
        style = "green" if result.phase == Phase.SUCCEEDED else "red"
        table.add_row(
            result.title,
            result.candidate,
            f"[{style}]{result.phase}[/{style}]",
            f"{result.seconds:.0f}s",
            result.detail,
        )
    stats = traffic.driver.stats
    answered = ", ".join(
        f"{backend} {code}: {count}" for (backend, code), count in sorted(stats.responses.items())
    )
    table.caption = f"Requests answered during the demo: {answered}"
    return table


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
    try:
        bed.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=true")
        bed.kubectl("create", "namespace", NAMESPACE)
        demo.kubectl_apply(list(yaml.safe_load_all((EXAMPLES / "serving.yaml").read_text())))
        console.print(
            "Model Deployments chat-v1, chat-v2 and chat-v3 are scheduled on kwok's fake nodes; "
            "each Pod gets a model-server double (chat-v3's fails 8% of requests)."
        )
        fleet.serve(NAMESPACE, "chat-v1")
        fleet.serve(NAMESPACE, "chat-v2")
        fleet.serve(NAMESPACE, "chat-v3", Behaviour(error_rate=0.08))
        operator.start()
        console.print(f"modelgate is running (logs: {operator.log_file}); traffic flows at 50 requests/s.")
        targets = {name: fleet.urls(name) for name in ("chat-v1", "chat-v2", "chat-v3")}
        watcher = HTTPRouteWatcher(demo.objects, NAMESPACE, "chat")
        with BackgroundTraffic(TrafficDriver(targets, rps=50), watcher) as traffic:
            results = [
                demo.watch_act("Act 1: chat-v2, a good candidate", demo.rollout_manifest("rollout-good.yaml"))
            ]
            route = next(
                d
                for d in yaml.safe_load_all((EXAMPLES / "serving.yaml").read_text())
                if d["kind"] == "HTTPRoute"
            )
            route["spec"]["rules"][0]["backendRefs"] = [
                {"name": "chat-v2", "port": 8000, "weight": 100},
                {"name": "chat-v3", "port": 8000, "weight": 0},
            ]
            demo.kubectl_apply([route])
            results.append(
                demo.watch_act("Act 2: chat-v3, 8% errors", demo.rollout_manifest("rollout-bad.yaml"))
            )
            console.print(summary(results, traffic))
        expected = [Phase.SUCCEEDED, Phase.ROLLED_BACK]
        return 0 if [r.phase for r in results] == expected else 1
    finally:
        operator.stop()
        fleet.stop()
        if started_here:
            bed.down()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.demo", description=__doc__)
    parser.add_argument("--root", type=Path, default=Path(".localcluster"), help="the bed's state folder")
    args = parser.parse_args(argv)
    return run(args.root, Console())


if __name__ == "__main__":
    sys.exit(main())
