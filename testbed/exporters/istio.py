"""Istio's standard metrics as the destination workload's sidecar reports them: istio/proxy at
c0655e1, source/extensions/filters/http/istio_stats/istio_stats.cc; Envoy's default buckets."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from testbed.exporters.base import Answer, Exporter, Identity

DURATION_BUCKETS_MS = (
    0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000, 60000,
    300000, 600000, 1800000, 3600000,
)  # fmt: skip


class IstioExporter(Exporter):
    def __init__(self, identity: Identity) -> None:
        super().__init__(identity)
        r = self.registry
        where = ["reporter", "destination_workload", "destination_workload_namespace"]
        self._where = ("destination", identity.model_name, identity.namespace)
        self.requests = Counter(
            "istio_requests", "Requests.", [*where, "response_code", "response_flags"], registry=r
        )
        self.duration = Histogram(
            "istio_request_duration_milliseconds",
            "Request duration.",
            [*where, "response_code"],
            buckets=DURATION_BUCKETS_MS,
            registry=r,
        )

    def answered(self, answer: Answer) -> None:
        self.requests.labels(*self._where, "200", "-").inc()
        self.duration.labels(*self._where, "200").observe(answer.latency * 1000, exemplar=self.exemplar)

    def failed(self) -> None:
        self.requests.labels(*self._where, "500", "-").inc(exemplar=self.exemplar)

    def aborted(self) -> None:
        # Envoy's DC flag: the downstream connection was terminated; no response code was sent.
        self.requests.labels(*self._where, "0", "DC").inc()
