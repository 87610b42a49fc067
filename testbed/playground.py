"""`make playground` / `make playground-down`: the local stack left running for a user's own rollouts.

`up` starts the bed in `--root` unless one is up there already, then the playground in the background,
and returns once it serves, printing a cheat sheet. The playground (`serve`, one process recorded in
`<root>/playground/`) runs examples/demo/serving.yaml in namespace `playground` (chat-v1 takes all
traffic; chat-v2 is good, chat-v3 fails 10% of requests, chat-v4 answers its first token 3x later),
Traefik serving its HTTPRoute, the operator for that namespace, 50 requests a second through
Traefik, and the bed's Prometheus at a fixed address, the one examples/playground/ names. `down`
stops that process by its pid (it stops what it started), and the bed if `up` started it.
Every listener is on 127.0.0.1."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
import time
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from testbed.binaries import CACHE
from testbed.demo_serving import serve, start_gateway
from testbed.fleet import ModelFleet
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from testbed.ports import bindable
from testbed.processes import ProcessRegistry, python_module_env
from testbed.tcp_forward import TcpForward
from testbed.traffic_driver import CHAT_PATH, BackgroundTraffic, gateway_driver

NAMESPACE = "playground"
PROMETHEUS_PORT = 19090  # examples/playground/ name http://127.0.0.1:19090 as their Prometheus
RPS = 50
STARTUP_TIMEOUT = 180.0
STOP_TIMEOUT = 60.0
SERVE = "playground"  # the background process's name in the playground's registry


@dataclass(frozen=True)
class Serving:
    """What the background process writes once it serves; `up` prints it."""

    gateway_url: str
    prometheus_url: str
    operator_log: str


class Playground:
    def __init__(self, root: Path) -> None:
        self.bed = LocalCluster(root)
        self.state = self.bed.layout.root / "playground"
        self.registry = ProcessRegistry(self.state)
        self.serving_file = self.state / "serving.json"
        self.bed_file = self.state / "started-the-bed"

    def is_running(self) -> bool:
        return any(self.registry.is_running(p) for p in self.registry.load())

    def up(self) -> int:
        if self.is_running():
            print(
                f"a playground is already running in {self.bed.layout.root}: `make playground-down` stops it"
            )
            return 1
        if not bindable(PROMETHEUS_PORT):
            print(
                f"127.0.0.1:{PROMETHEUS_PORT} is taken: the playground's Prometheus address", file=sys.stderr
            )
            return 1
        if not self.bed.is_up():
            print(f"Starting the local control plane and Prometheus in {self.bed.layout.root} (about 30 s)")
            self.bed.up()
            self.state.mkdir(parents=True, exist_ok=True)
            self.bed_file.touch()
        self.state.mkdir(parents=True, exist_ok=True)
        self.serving_file.unlink(missing_ok=True)
        print("Starting Traefik, the model servers, the operator and the traffic")
        argv = [sys.executable, "-m", "testbed.playground", "serve", "--root", str(self.bed.layout.root)]
        process = self.registry.start(SERVE, argv, env=python_module_env())
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not self.serving_file.exists():
            if not self.registry.is_running(process) or time.monotonic() > deadline:
                print(f"the playground did not start; its log: {process.log_file}", file=sys.stderr)
                self.down()
                return 1
            time.sleep(0.5)
        print(cheat_sheet(self.bed, Serving(**json.loads(self.serving_file.read_text()))))
        return 0

    def down(self) -> int:
        self.registry.stop_all(timeout=STOP_TIMEOUT)
        # Were the background process killed, its operator would be left: stopped by its record too.
        ProcessRegistry(self.state / "operator").stop_all()
        self.serving_file.unlink(missing_ok=True)
        if self.bed_file.exists():
            self.bed.down()
            self.bed_file.unlink()
        print("The playground is stopped.")
        return 0

    def serve(self, stop: threading.Event) -> int:
        """The background process: runs until SIGTERM, then stops what it started."""
        bed = self.bed
        api_client = config.new_client_from_config(config_file=str(bed.kubeconfig))  # type: ignore[no-untyped-call]
        with ExitStack() as stack:  # stopped in the reverse order: the traffic first, Traefik last
            stack.callback(_delete_namespace, client.CoreV1Api(api_client))
            traefik = start_gateway(bed, api_client)
            stack.callback(traefik.stop)
            fleet = ModelFleet(bed, api_client)
            stack.callback(fleet.stop)
            serve(bed, api_client, fleet, traefik, NAMESPACE)
            operator = OperatorProcess(bed.kubeconfig, self.state / "operator", [NAMESPACE])
            stack.callback(operator.stop)
            operator.start()
            stack.enter_context(TcpForward(PROMETHEUS_PORT, urlsplit(bed.prometheus_url).port or 0))
            stack.enter_context(BackgroundTraffic(gateway_driver(traefik.url, rps=RPS)))
            serving = Serving(traefik.url, f"http://127.0.0.1:{PROMETHEUS_PORT}", str(operator.log_file))
            self.serving_file.write_text(json.dumps(asdict(serving)))
            print("serving", serving, flush=True)
            stop.wait()
        return 0


def _delete_namespace(core: client.CoreV1Api) -> None:
    with contextlib.suppress(ApiException):  # never created
        core.delete_namespace(NAMESPACE)


def cheat_sheet(bed: LocalCluster, serving: Serving) -> str:
    bins = CACHE / "bin"
    return f"""
The playground is up: namespace {NAMESPACE}, {RPS} requests/s through Traefik to HTTPRoute chat.
chat-v1 takes all traffic; chat-v2 is good, chat-v3 fails 10% of its requests, chat-v4 answers its
first token 3x later. Each is a Deployment behind a Service of the same name.

In a shell at the checkout:
  export PATH=$PWD/.venv/bin:{bins}:$PATH KUBECONFIG={bed.kubeconfig}
  kubectl apply -f examples/playground/rollout-chat-v2.yaml   # promoted
  modelgate status chat -n {NAMESPACE} -w                     # live until it ends
  kubectl apply -f examples/playground/rollout-chat-v3.yaml   # rolled back
  modelgate status chat -n {NAMESPACE}

Prometheus UI: {serving.prometheus_url}   gateway: {serving.gateway_url}{CHAT_PATH}
Operator log:  {serving.operator_log}
Stop it all:   make playground-down
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.playground", description=__doc__)
    parser.add_argument("command", choices=["up", "down", "serve"], help="serve: the background process")
    parser.add_argument("--root", type=Path, default=Path(".localcluster"), help="the bed's state folder")
    args = parser.parse_args(argv)
    playground = Playground(args.root)
    if args.command == "up":
        return playground.up()
    if args.command == "down":
        return playground.down()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    return playground.serve(stop)


if __name__ == "__main__":
    sys.exit(main())
