"""vLLM's series, read the same on llm-d's vLLM simulator.

vLLM's series (names from vllm 0.34.0, also in 0.11.0: vllm/v1/metrics/loggers.py,
vllm/entrypoints/serve/instrumentator/metrics.py), read the same on llm-d's vLLM simulator
(llm-d-inference-sim v0.10.2: pkg/llm-d-inference-sim/metrics.go); docs/presets.md cites each."""

from modelgate.api.series import SeriesComponent
from modelgate.metrics.presets.common import VLLM_LATENCY_GRID, Histogram, Stack, bucket_grid, by_pod, counter

# prometheus-fastapi-instrumentator groups status codes by default: `status` is "2xx" or "5xx";
# without grouping it is the code ("503"). `5..` matches both. Only it counts failed requests: the
# simulator has no such counter, so its errorRate and abortRate have no data, never 0.
_HTTP = "http_requests_total"
_LATENCY = Histogram("vllm:e2e_request_latency_seconds", grid=VLLM_LATENCY_GRID)
# Its bucket bounds (vllm/v1/metrics/loggers.py; the simulator's pkg/common/utils.go): the boundaries
# a quantile comparison with confidence reads, no more queries than the buckets.
_TTFT_GRID = bucket_grid(
    "0.001 0.005 0.01 0.02 0.04 0.06 0.08 0.1 0.25 0.5 0.75 1 2.5 5 7.5 10 20 40 80 160 640 2560"
)
_TPOT_GRID = bucket_grid("0.01 0.025 0.05 0.075 0.1 0.15 0.2 0.3 0.4 0.5 0.75 1 2.5 5 7.5 10 20 40 80")

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
    ttft=Histogram("vllm:time_to_first_token_seconds", grid=_TTFT_GRID),
    # Per generated token, in both: vLLM's per-request vllm:request_time_per_output_token_seconds is
    # not exported by the simulator, whose vllm:time_per_output_token_seconds is per token too.
    tpot=Histogram("vllm:inter_token_latency_seconds", grid=_TPOT_GRID),
    latency=_LATENCY,
    generated_tokens=counter("vllm:generation_tokens_total"),
    queue="vllm:num_requests_waiting",
    exporters={_HTTP: SeriesComponent.VLLM_INSTRUMENTATOR},
)
