"""SGLang's series (exported only with `--enable-metrics`).

SGLang's series, exported only with `--enable-metrics` (names from sglang 0.5.10.post1:
sglang/srt/observability/metrics_collector.py, sglang/srt/utils/common.py; docs/presets.md)."""

from modelgate.api.series import SeriesComponent
from modelgate.metrics.presets.common import Histogram, Stack, by_pod, counter

# The HTTP middleware counts every path, /metrics and /health included: only the inference
# endpoints count as requests.
_INFERENCE = 'endpoint=~"/v1/chat/completions|/v1/completions|/generate"'
_RESPONSES = "sglang:http_responses_total"

STACK = Stack(
    source="sglang",
    select=by_pod,
    exporter=SeriesComponent.SGLANG_SERVER,
    requests=counter(_RESPONSES, _INFERENCE),
    errors=counter(_RESPONSES, f'{_INFERENCE},status_code=~"5.."', absent_means_zero=True),
    aborts=counter("sglang:num_aborted_requests_total", absent_means_zero=True),
    ttft=Histogram("sglang:time_to_first_token_seconds"),
    # Per output token (each decode interval divided by the tokens it produced).
    tpot=Histogram("sglang:inter_token_latency_seconds"),
    latency=Histogram("sglang:e2e_request_latency_seconds"),
    generated_tokens=counter("sglang:generation_tokens_total"),
    queue="sglang:num_queue_reqs",
)
