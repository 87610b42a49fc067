"""Triton Inference Server (core r25.12)'s series: src/metrics.cc, src/metric_model_reporter.{h,cc}.
prometheus-cpp writes counters without a `_total` suffix, which prometheus_client's Counter always
adds: the counters here are Gauges that only go up, the same series under the same names."""

from __future__ import annotations

from prometheus_client import Gauge, Histogram

from testbed.exporters.base import Answer, Exporter, Identity

# The default buckets of the first-response histogram (on with histogram_latencies=true).
FIRST_RESPONSE_BUCKETS_MS = (100, 500, 2000, 5000)
FAILURE_REASONS = ("REJECTED", "CANCELED", "BACKEND", "OTHER")


class TritonExporter(Exporter):
    def __init__(self, identity: Identity) -> None:
        super().__init__(identity)
        r, model = self.registry, identity.model_name
        labels = ["model", "version"]
        self.successes = Gauge("nv_inference_request_success", "Successes.", labels, registry=r).labels(
            model, "1"
        )
        failures = Gauge("nv_inference_request_failure", "Failures.", [*labels, "reason"], registry=r)
        # Triton creates every reason's series at start.
        self.failures = {reason: failures.labels(model, "1", reason) for reason in FAILURE_REASONS}
        self.first_response = Histogram(
            "nv_inference_first_response_histogram_ms",
            "Duration from request to first response in milliseconds.",
            labels,
            buckets=FIRST_RESPONSE_BUCKETS_MS,
            registry=r,
        ).labels(model, "1")
        self.pending = Gauge("nv_inference_pending_request_count", "Pending.", labels, registry=r).labels(
            model, "1"
        )

    def answered(self, answer: Answer) -> None:
        self.successes.inc()
        self.first_response.observe(answer.ttft * 1000)

    def failed(self) -> None:
        self.failures["BACKEND"].inc()

    def aborted(self) -> None:
        self.failures["CANCELED"].inc()

    def set_waiting(self, requests: int) -> None:
        self.pending.set(requests)
