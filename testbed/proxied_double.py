"""A model pod with the refusal-proxy sidecar, on this machine: the model-server double and
`modelgate refusal-proxy` in front of it, both as processes recorded in a `ProcessRegistry` (so the
bed's `down` stops them too)."""

from __future__ import annotations

import functools
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from testbed.model_server_double import DOUBLE_ENTRY
from testbed.ports import free_port
from testbed.processes import MODELGATE_ENTRY, ProcessRegistry, StartedProcess
from testbed.waiting import wait_for


@dataclass(frozen=True)
class ProxiedDouble:
    server_url: str  # the double, directly
    proxy_url: str  # the same double through the proxy
    metrics_address: str  # HOST:PORT of the proxy's /metrics
    processes: tuple[StartedProcess, ...]

    def stop(self, registry: ProcessRegistry) -> None:
        for process in reversed(self.processes):
            registry.stop(process)


def start_proxied_double(
    registry: ProcessRegistry,
    model_name: str,
    name: str = "refusal",
    proxy_args: Sequence[str] = (),
    proxy_env: Mapping[str, str] | None = None,
) -> ProxiedDouble:
    """Starts both processes and waits until both answer /healthz; `proxy_args` and `proxy_env` are
    the proxy's besides its ports and upstream (recording options and their store, say)."""
    server_port, proxy_port, metrics_port = free_port(), free_port(), free_port()
    server = ["--port", str(server_port), "--model-name", model_name, "--no-refusal-counters"]
    proxy = ["refusal-proxy", "--upstream", f"http://127.0.0.1:{server_port}", "--port", str(proxy_port)]
    proxy += ["--metrics-port", str(metrics_port), "--model", model_name, *proxy_args]
    started: list[StartedProcess] = []
    try:
        for role, entry, args, env in (
            ("double", DOUBLE_ENTRY, server, None),
            ("proxy", MODELGATE_ENTRY, proxy, proxy_env),
        ):
            started.append(registry.start_python(f"{name}-{role}", entry, args, env=env))
        for port in (server_port, metrics_port):
            wait_for(
                functools.partial(answers_healthz, port),
                timeout=60,
                what=f"127.0.0.1:{port}/healthz to answer",
            )
    except BaseException:
        for process in reversed(started):
            registry.stop(process)
        raise
    return ProxiedDouble(
        f"http://127.0.0.1:{server_port}",
        f"http://127.0.0.1:{proxy_port}",
        f"127.0.0.1:{metrics_port}",
        tuple(started),
    )


def answers_healthz(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
        return bool(response.status == 200)
