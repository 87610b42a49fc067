"""vLLM's series, read the same on llm-d's vLLM simulator.

vLLM's series (names from vllm 0.34.0, also in 0.11.0: vllm/v1/metrics/loggers.py,
vllm/entrypoints/serve/instrumentator/metrics.py), read the same on llm-d's vLLM simulator
(llm-d-inference-sim v0.10.2: pkg/llm-d-inference-sim/metrics.go); docs/presets.md cites each."""

from modelgate.api.series import SeriesComponent
from modelgate.metrics.presets.common import Histogram, Stack, by_pod, counter

# prometheus-fastapi-instrumentator groups status codes by default: `status` is "2xx" or "5xx";
# without grouping it is the code ("503"). `5..` matches both. Only it counts failed requests: the
# simulator has no such counter, so its errorRate and abortRate have no data, never 0.
_HTTP = "http_requests_total"
_LATENCY = Histogram("vllm:e2e_request_latency_seconds")

STACK = Stack(
    source="vllm",
    select=by_pod,
    exporter=SeriesComponent.VLLM_SERVER,
    requests=counter(_HTTP),
    # Without the HTTP counter (the simulator), the requests that finished count against minRequests.
    answered=_LATENCY.observations(),
    errors=counter(_HTTP, 'status=~"5.."', absent_means_zero=True),
    # vLLM creates it at 0 for every finished_reason (stop, length, abort, error, repetition) at start;
    # the simulator labels it `finish_reason`.
    aborts=counter(
        "vllm:request_success_total",
        'finished_reason="abort"',
        absent_means_zero=True,
        alternatives=('finish_reason="abort"',),
    ),
    ttft=Histogram("vllm:time_to_first_token_seconds"),
    # Per generated token, in both: vLLM's per-request vllm:request_time_per_output_token_seconds is
    # not exported by the simulator, whose vllm:time_per_output_token_seconds is per token too.
    tpot=Histogram("vllm:inter_token_latency_seconds"),
    latency=_LATENCY,
    generated_tokens=counter("vllm:generation_tokens_total"),
    queue="vllm:num_requests_waiting",
    exporters={_HTTP: SeriesComponent.VLLM_INSTRUMENTATOR},
)
