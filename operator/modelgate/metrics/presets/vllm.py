"""vLLM's series (names from vllm 0.34.0, also in 0.11.0: vllm/v1/metrics/loggers.py,
vllm/entrypoints/serve/instrumentator/metrics.py; docs/presets.md cites each)."""

from modelgate.metrics.presets.common import Histogram, Stack, by_pod, counter

# prometheus-fastapi-instrumentator groups status codes by default: `status` is "2xx" or "5xx";
# without grouping it is the code ("503"). `5..` matches both.
_HTTP = "http_requests_total"

STACK = Stack(
    source="vllm",
    select=by_pod,
    requests=counter(_HTTP),
    errors=counter(_HTTP, 'status=~"5.."', absent_means_zero=True),
    # Created at 0 for every finished_reason (stop, length, abort, error, repetition) at start.
    aborts=counter("vllm:request_success_total", 'finished_reason="abort"', absent_means_zero=True),
    ttft=Histogram("vllm:time_to_first_token_seconds"),
    # Per request: (e2e - ttft) / (output tokens - 1); vllm:inter_token_latency_seconds is per token.
    tpot=Histogram("vllm:request_time_per_output_token_seconds"),
    latency=Histogram("vllm:e2e_request_latency_seconds"),
    generated_tokens=counter("vllm:generation_tokens_total"),
    queue="vllm:num_requests_waiting",
)
