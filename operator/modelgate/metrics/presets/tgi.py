"""Text Generation Inference's series.

Text Generation Inference's series (names from text-generation-inference v3.3.7:
router/src/server.rs, router/src/infer/mod.rs, backends/v3/src/{backend,queue}.rs; docs/presets.md).
Its exporter (metrics-exporter-prometheus) adds no `_total` suffix to counters."""

from modelgate.api.series import SeriesComponent
from modelgate.metrics.presets.common import Histogram, Stack, by_pod, counter

_FAILURES = "tgi_request_failure"

STACK = Stack(
    source="tgi",
    select=by_pod,
    exporter=SeriesComponent.TGI_SERVER,
    requests=counter("tgi_request_count"),
    # `err`: generation and incomplete are the server's failures, overloaded its refusal to queue;
    # validation and template are the client's (HTTP 422), dropped is the client going away.
    errors=counter(_FAILURES, 'err=~"generation|incomplete|overloaded"', absent_means_zero=True),
    aborts=counter(_FAILURES, 'err="dropped"', absent_means_zero=True),
    # The mean time per token of each request.
    tpot=Histogram("tgi_request_mean_time_per_token_duration"),
    latency=Histogram("tgi_request_duration"),
    # A histogram of tokens per request: its sum counts every generated token.
    generated_tokens=counter("tgi_request_generated_tokens_sum"),
    queue="tgi_queue_size",
    lacks=dict.fromkeys(
        ("ttftP50", "ttftP99", "goodputPerAccelerator", "goodputTokensPerAccelerator"),
        "TGI exports no time-to-first-token histogram",
    ),
)
