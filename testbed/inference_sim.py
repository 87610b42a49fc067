"""llm-d's vLLM simulator (llm-d-inference-sim) as a model Pod's server: an OpenAI-compatible server
that someone else wrote and maintains, exporting vLLM's Prometheus series, with time to first token
and inter-token latency drawn around set means, slowing down as running requests approach
`--max-num-seqs`, and failing a set share of requests.

hack/build-bins.sh builds it (the version is pinned in hack/gomod/inference-sim/go.mod) as the
command `inference-sim`, which serves the simulator on the address MODELGATE_SIM_HOST names (a Pod's
loopback IP) instead of every interface. What a Deployment's Pods simulate is a `SimulatorFlags`, or
the arguments of the Pod's container, as a cluster would run them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from testbed.binaries import binary
from testbed.processes import ProcessRegistry, StartedProcess
from testbed.traffic_driver import SERVED_MODEL

# The simulator's failure types (its --failure-types): server_error answers 503, rate_limit 429.
FAILURE_TYPES = frozenset(
    {"server_error", "rate_limit", "invalid_api_key", "context_length", "invalid_request", "model_not_found"}
)


@dataclass(frozen=True)
class SimulatorFlags:
    """One Deployment's simulated model: latencies in seconds (means, and standard deviations of at
    most 30% of the mean, which the simulator requires; it draws whole milliseconds within 0.3-1.7x
    the mean), concurrency, failures (a percentage) and the seed."""

    time_to_first_token: float = 0.05
    time_to_first_token_std_dev: float = 0.005
    inter_token_latency: float = 0.01
    inter_token_latency_std_dev: float = 0.001
    max_num_seqs: int = 64
    # How much slower a request runs when `max_num_seqs` run at once (1: not at all).
    time_factor_under_load: float = 1.0
    failure_rate_percent: int = 0
    failure_types: tuple[str, ...] = ("server_error",)
    seed: int = 1
    # The model name requests must send (vLLM's --served-model-name); a canary's versions share one.
    served_model_name: str = SERVED_MODEL

    def __post_init__(self) -> None:
        if not 0 <= self.failure_rate_percent <= 100:
            raise ValueError(f"failure_rate_percent {self.failure_rate_percent} is not in 0..100")
        unknown = set(self.failure_types) - FAILURE_TYPES
        if unknown:
            raise ValueError(
                f"unknown failure types {sorted(unknown)}; the simulator has {sorted(FAILURE_TYPES)}"
            )

    def args(self, model: str) -> list[str]:
        """The simulator's arguments: echo mode, so an answer is the request's last message."""
        argv = [
            f"--model={model}",
            f"--served-model-name={self.served_model_name}",
            "--mode=echo",
            f"--time-to-first-token={_ms(self.time_to_first_token)}",
            f"--time-to-first-token-std-dev={_ms(self.time_to_first_token_std_dev)}",
            f"--inter-token-latency={_ms(self.inter_token_latency)}",
            f"--inter-token-latency-std-dev={_ms(self.inter_token_latency_std_dev)}",
            f"--max-num-seqs={self.max_num_seqs}",
            f"--time-factor-under-load={self.time_factor_under_load:g}",
            f"--seed={self.seed}",
        ]
        if self.failure_rate_percent:
            argv += [
                f"--failure-injection-rate={self.failure_rate_percent}",
                f"--failure-types={','.join(self.failure_types)}",
            ]
        return argv


def lora_args(adapters: Sequence[str]) -> list[str]:
    """The simulator's flags to serve LoRA adapters of its --model, all in one batch. A LoRA request's
    series carry the base model's name (`model_name`), not the adapter's, as vLLM's do."""
    modules = [json.dumps({"name": adapter}) for adapter in adapters]
    return [f"--max-loras={len(adapters)}", "--lora-modules", *modules]


def start_simulator(
    processes: ProcessRegistry,
    name: str,
    host: str,
    port: int,
    args: Sequence[str],
    pod: tuple[str, str] | None = None,
) -> StartedProcess:
    """Starts the simulator with `args` on `host:port` (a loopback address). With `pod` (namespace,
    name), it knows its Pod as the downward API would tell it, and names it in each answer's
    `x-inference-pod` header."""
    if any(arg.startswith("--port") for arg in args):
        raise ValueError(f"{name}: the port is the Pod's, not an argument: {list(args)}")
    argv = [str(binary("inference-sim")), f"--port={port}", *args]
    env = {"MODELGATE_SIM_HOST": host}
    if pod is not None:
        env |= {"POD_NAMESPACE": pod[0], "POD_NAME": pod[1]}
    return processes.start(name, argv, env=env)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:g}ms"
