"""The llm-d endpoint picker's series, by target model.

The endpoint picker's series, by target model (names from llm-d/llm-d-inference-scheduler at
520af47 (main, 2026-05-17), pkg/epp/metrics/metrics.go, into which the Gateway API Inference
Extension moved its endpoint picker after v1.5.0; docs/presets.md).

The picker labels its request series with `model_name`, `target_model_name` (and `priority`, or
`error_code`) only: neither the namespace nor the pool. One picker serves one pool, so both come from
the scrape, as a Prometheus Operator ServiceMonitor (the Gateway API Inference Extension chart's)
labels every series: `namespace`, the picker's namespace (its pool's: the pool's
spec.endpointPickerRef names a Service in the pool's namespace), and `service`, that Service's name.
Two teams serving an adapter of the same name are told apart by those labels."""

from modelgate.api.series import SeriesComponent
from modelgate.metrics.context import QueryContext, Side, label_matcher
from modelgate.metrics.presets.common import Histogram, Stack, counter


def by_target_model(ctx: QueryContext, side: Side) -> str:
    """The requests the picker of the side's pool (any picker in the namespace, for a Deployment
    side) routed to the side's model."""
    picker = ctx.picker(side)
    return ",".join(
        (
            label_matcher("namespace", ctx.namespace),
            *((label_matcher("service", picker),) if picker else ()),
            label_matcher("target_model_name", ctx.model(side)),
        )
    )


STACK = Stack(
    source="llm-d",
    select=by_target_model,
    exporter=SeriesComponent.LLMD_ENDPOINT_PICKER,
    requests=counter("inference_objective_request_total"),
    # Every response whose status is not 200 (4xx included: the picker does not tell them apart),
    # and the picker's own failures.
    errors=counter("inference_objective_request_error_total", absent_means_zero=True),
    # Recorded only by the predicted-latency data producer plugin.
    ttft=Histogram("inference_objective_request_ttft_seconds"),
    tpot=Histogram("inference_objective_request_tpot_seconds"),
    latency=Histogram("inference_objective_request_duration_seconds"),
    # Output tokens per request (from the response's usage): its sum counts every token.
    generated_tokens=counter("inference_objective_output_tokens_sum"),
    lacks={
        "abortRate": "the endpoint picker does not count cancelled requests",
        "queueDepth": "the endpoint picker reports queue size per pool (inference_pool_average_queue_size), "
        "not per model",
    },
    by_model=True,
)
