"""Traefik's service metrics for the backends of a weighted HTTPRoute rule.

Traefik's service metrics, as its Kubernetes Gateway provider names a weighted HTTPRoute rule's
backends (names from traefik v3.7.13: pkg/metrics/prometheus.go; the service names from
pkg/provider/kubernetes/gateway/httproute.go and kubernetes.go; docs/presets.md).

Traefik records a request in the service that served it: each backendRef of a rule is a service of
its own (`<router>-svc-<namespace>-<backend>-<index>@kubernetesgateway`, the router being
`httproute-<namespace>-<route>-gw-...`), so the incumbent's and the candidate's requests are told
apart, and a failure counts even when the model server itself never saw the request."""

from modelgate.api.series import SeriesComponent
from modelgate.metrics.context import QueryContext, QueryContextError, Side
from modelgate.metrics.presets.common import Histogram, Stack, counter, lacks_server_only


def by_backend(ctx: QueryContext, side: Side) -> str:
    """The services of the side's backendRef in the rollout's routes. Traefik replaces every
    character but letters and digits in a route's name with `-`."""
    if not ctx.gateway_routes or not ctx.backend(side):
        raise QueryContextError(
            "source traefik counts each side's requests per HTTPRoute backend: it needs "
            "spec.trafficRouting.gatewayAPI"
        )
    routes = "|".join(sorted({route.replace("/", f"-{ctx.namespace}-") for route in ctx.gateway_routes}))
    routes = routes.replace(".", "-")
    # The backend's name stands in the service's as written: a dot is a dot (escaped for PromQL too).
    backend = ctx.backend(side).replace(".", "\\\\.")
    return f'service=~"({routes})-gw-.+-svc-{ctx.namespace}-{backend}-[0-9]+@kubernetesgateway"'


_REQUESTS = "traefik_service_requests_total"
_PROXY_ONLY = "a proxy sees HTTP, not the model server's tokens or queue"

STACK = Stack(
    source="traefik",
    select=by_backend,
    exporter=SeriesComponent.TRAEFIK_GATEWAY,
    requests=counter(_REQUESTS),
    errors=counter(_REQUESTS, 'code=~"5.."', absent_means_zero=True),
    # Traefik answers 499 when the client closed the connection before the answer was complete.
    aborts=counter(_REQUESTS, 'code="499"', absent_means_zero=True),
    latency=Histogram("traefik_service_request_duration_seconds"),
    lacks=lacks_server_only(_PROXY_ONLY),
)
