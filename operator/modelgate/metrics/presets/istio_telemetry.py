"""Istio's standard metrics, as the destination workload's sidecar reports them.

Istio's standard metrics, as the destination workload's sidecar reports them (names from
istio/proxy at c0655e1: source/extensions/filters/http/istio_stats/istio_stats.cc; docs/presets.md)."""

from modelgate.api.series import SeriesComponent
from modelgate.metrics.context import QueryContext, Side
from modelgate.metrics.presets.common import Histogram, Stack, counter, lacks_server_only


def by_destination_workload(ctx: QueryContext, side: Side) -> str:
    """The server-side report only (each request is also reported by the client's proxy); the
    workload of a Deployment's pods is the Deployment's name."""
    return (
        f'reporter="destination",destination_workload_namespace="{ctx.namespace}",'
        f'destination_workload="{ctx.deployment(side)}"'
    )


_REQUESTS = "istio_requests_total"
_SERVER_ONLY = "a proxy sees HTTP, not the model server's tokens or queue"

STACK = Stack(
    source="istio",
    select=by_destination_workload,
    exporter=SeriesComponent.ISTIO_PROXY,
    requests=counter(_REQUESTS),
    errors=counter(_REQUESTS, 'response_code=~"5.."', absent_means_zero=True),
    # Envoy's response flag DC: the downstream (client) connection was terminated.
    aborts=counter(_REQUESTS, 'response_flags=~"(.*,)?DC(,.*)?"', absent_means_zero=True),
    latency=Histogram("istio_request_duration_milliseconds", unit=0.001),
    lacks=lacks_server_only(_SERVER_ONLY),
)
