"""Text Generation Inference v3.3.7's series: router/src/server.rs (buckets), router/src/infer/mod.rs,
backends/v3/src/{backend,queue}.rs. Its exporter (metrics-exporter-prometheus) writes counters
without a `_total` suffix, which prometheus_client's Counter always adds: the counters here are
Gauges that only go up, the same series under the same names."""

from __future__ import annotations

from prometheus_client import Gauge, Histogram

from testbed.exporters.base import Answer, Exporter, Identity

# router/src/server.rs: 35 durations from 0.0001 s, each 1.5 times the one before.
DURATION_BUCKETS = tuple(0.0001 * 1.5**k for k in range(1, 36))
# max_total_tokens / 100 x (1..100), with TGI's default max_total_tokens of 2048 assumed here.
GENERATED_TOKENS_BUCKETS = tuple(2048 / 100 * (x + 1) for x in range(100))


class TgiExporter(Exporter):
    def __init__(self, identity: Identity) -> None:
        super().__init__(identity)
        r = self.registry
        self.requests = Gauge("tgi_request_count", "Requests.", registry=r)
        self.successes = Gauge("tgi_request_success", "Successful requests.", registry=r)
        self.failures = Gauge("tgi_request_failure", "Failed requests.", ["err"], registry=r)
        self.latency = Histogram(
            "tgi_request_duration", "Request duration.", buckets=DURATION_BUCKETS, registry=r
        )
        self.tpot = Histogram(
            "tgi_request_mean_time_per_token_duration",
            "Mean time per token.",
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.tokens = Histogram(
            "tgi_request_generated_tokens", "Generated tokens.", buckets=GENERATED_TOKENS_BUCKETS, registry=r
        )
        self.queue = Gauge("tgi_queue_size", "Queued requests.", registry=r)

    def answered(self, answer: Answer) -> None:
        self.requests.inc()
        self.successes.inc()
        self.latency.observe(answer.latency, exemplar=self.exemplar)
        self.tpot.observe(answer.tpot)
        self.tokens.observe(answer.tokens)

    def failed(self) -> None:
        self.requests.inc()
        self.failures.labels("generation").inc()

    def aborted(self) -> None:
        self.requests.inc()
        self.failures.labels("dropped").inc()

    def set_waiting(self, requests: int) -> None:
        self.queue.set(requests)
