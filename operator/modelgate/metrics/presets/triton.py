"""Triton Inference Server's series.

Triton Inference Server's series (names from triton-inference-server/core r25.12: src/metrics.cc,
src/metric_model_reporter.{h,cc}, src/infer_stats.cc; docs/presets.md). prometheus-cpp adds no
`_total` suffix to counters."""

from modelgate.api.series import SeriesComponent
from modelgate.metrics.presets.common import Counter, Histogram, Stack, by_pod, counter

_FAILURES = "nv_inference_request_failure"
_NO_TPOT = "Triton's core exports no time per output token"
_NO_TOKENS = "Triton's core counts inferences, not generated tokens"
_NO_LATENCY_HISTOGRAM = (
    "Triton exports request latency as cumulative microsecond counters and per-pod summaries, "
    "which cannot be combined into a quantile or a bucket across pods"
)

STACK = Stack(
    source="triton",
    select=by_pod,
    exporter=SeriesComponent.TRITON_SERVER,
    # Every request ends as a success or a failure; failure series exist from the start per reason.
    requests=Counter(("nv_inference_request_success", _FAILURES)),
    # `reason`: BACKEND and OTHER are the server's failures, REJECTED its queue refusing a request;
    # CANCELED is the client's cancellation.
    errors=counter(_FAILURES, 'reason=~"BACKEND|OTHER|REJECTED"', absent_means_zero=True),
    aborts=counter(_FAILURES, 'reason="CANCELED"', absent_means_zero=True),
    # Only with `--metrics-config histogram_latencies=true`; buckets 100, 500, 2000, 5000 ms.
    ttft=Histogram("nv_inference_first_response_histogram_ms", unit=0.001),
    queue="nv_inference_pending_request_count",
    lacks={
        "tpotP99": _NO_TPOT,
        "goodputPerAccelerator": _NO_TPOT,
        "goodputTokensPerAccelerator": _NO_TPOT,
        "costPerMillionTokens": _NO_TOKENS,
        "latencyP99": _NO_LATENCY_HISTOGRAM,
        "slowRequestRate": _NO_LATENCY_HISTOGRAM,
        "tokensPerSecond": _NO_TOKENS,
    },
)
