"""The operator as a real process (`modelgate run`), for the tests and the demo."""

from __future__ import annotations

import functools
import json
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from modelgate.api.addresses import ALLOW_LOOPBACK_FLAG
from modelgate.kube.check_pod_policy import CUSTOM_IMAGES_ENV
from modelgate.kube.gate_jobs import EVALUATOR_IMAGE_ENV
from testbed.check_pods import BED_CHECK_IMAGES, BED_EVALUATOR_IMAGE
from testbed.ports import bindable, free_port
from testbed.processes import MODELGATE_ENTRY, ProcessRegistry, StartedProcess
from testbed.waiting import wait_for


class OperatorProcess:
    """`modelgate run` against a kubeconfig, with its logs in a file; stopped by its pid."""

    def __init__(
        self,
        kubeconfig: Path,
        state_dir: Path,
        namespaces: Sequence[str] = (),
        extra_args: Sequence[str] = (),
        entry: str = MODELGATE_ENTRY,
        env: Mapping[str, str] | None = None,
        allow_loopback: bool = True,
    ) -> None:
        self.kubeconfig = kubeconfig
        self.namespaces = list(namespaces)  # empty: every namespace
        self.extra_args = list(extra_args)  # more `modelgate run` options, e.g. --selector
        # The entry point that runs `modelgate run` (tests may wrap it), and more variables for it.
        self.entry = entry
        self.env = dict(env or {})
        # The bed's Prometheus and model servers listen on 127.0.0.1: a local bed allows loopback (and
        # the operator passes that on to its evaluator Jobs); False: refused, as in a real cluster.
        self.allow_loopback = allow_loopback
        self.registry = ProcessRegistry(state_dir)
        state_dir.mkdir(parents=True, exist_ok=True)
        self.metrics_port = free_port()
        self.health_port = free_port()
        self.process: StartedProcess | None = None
        self.log_file = state_dir / "logs" / "operator.log"

    def start(self) -> None:
        args = [
            "run",
            f"--kubeconfig={self.kubeconfig}",
            f"--metrics-address=127.0.0.1:{self.metrics_port}",
            f"--health-address=127.0.0.1:{self.health_port}",
            "--log-format=json",
            *([ALLOW_LOOPBACK_FLAG] if self.allow_loopback else []),
            *(f"--namespace={namespace}" for namespace in self.namespaces),
            *self.extra_args,
        ]
        # The gate's evaluator Jobs run the operator's image, which the bed runs as `python -m modelgate`;
        # custom checks may run the bed's check images.
        env = {
            EVALUATOR_IMAGE_ENV: BED_EVALUATOR_IMAGE,
            CUSTOM_IMAGES_ENV: json.dumps(BED_CHECK_IMAGES),
            **self.env,
        }
        for port in (self.metrics_port, self.health_port):
            # Started again after a kill: the killed process's sockets can close a moment after its
            # last thread has ended (a restart once found its metrics port taken, and died).
            wait_for(
                functools.partial(bindable, port, reuse_address=True),
                timeout=30,
                what=f"port {port} to be free",
            )
        self.process = self.registry.start_python("operator", self.entry, args, env=env)
        wait_for(self._healthy, timeout=60, what=f"the operator's liveness endpoint (log: {self.log_file})")

    def _healthy(self) -> bool:
        url = f"http://127.0.0.1:{self.health_port}/healthz"
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)

    def stop(self) -> None:
        if self.process is not None:
            self.registry.stop(self.process)
            self.process = None

    def kill(self) -> None:
        """SIGKILL: no cleanup, no goodbye, as when a node dies."""
        assert self.process is not None
        self.registry.kill(self.process)
        self.process = None

    def logs(self) -> str:
        return self.log_file.read_text() if self.log_file.exists() else ""

    def log_records(self) -> list[dict[str, Any]]:
        """The JSON log lines written so far; a line the operator is still writing is left out."""
        complete = self.logs().rpartition("\n")[0]
        return [json.loads(line) for line in complete.splitlines() if line.startswith("{")]

    def counter(self, name: str, **labels: str) -> float:
        """The sum of one of the operator's own counters over the series matching `labels`, read from
        its /metrics endpoint (e.g. `modelgate_api_requests_total`, verb="get")."""
        return self.counters(name, **labels)[name]

    def counters(self, *names: str, **labels: str) -> dict[str, float]:
        """Like `counter`, for several names from one read of /metrics (which is large with
        many rollouts, and costs the operator CPU to render)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as response:
            text = response.read().decode()
        sums = dict.fromkeys(names, 0.0)
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name in sums and labels.items() <= sample.labels.items():
                    sums[sample.name] += sample.value
        return sums
