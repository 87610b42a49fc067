"""SGLang 0.5.10.post1's series with --enable-metrics: sglang/srt/observability/metrics_collector.py
(default buckets) and the HTTP middleware of sglang/srt/utils/common.py."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from testbed.exporters.base import Answer, Exporter, Identity

TTFT_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400)
E2E_LATENCY_BUCKETS = (0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 200, 400, 600)
INTER_TOKEN_LATENCY_BUCKETS = (
    0.002, 0.004, 0.006, 0.008, 0.010, 0.015, 0.020, 0.025, 0.030, 0.035, 0.040,
    0.060, 0.080, 0.100, 0.200, 0.400, 0.600, 0.800, 1.000, 2.000, 4.000, 6.000, 8.000,
)  # fmt: skip
CHAT_ENDPOINT = "/v1/chat/completions"


class SglangExporter(Exporter):
    def __init__(self, identity: Identity) -> None:
        super().__init__(identity)
        r, model = self.registry, identity.model_name
        labels = ["model_name"]

        series = {"model_name": model}
        self.ttft = self.histogram("sglang:time_to_first_token_seconds", TTFT_BUCKETS, series)
        self.itl = self.histogram("sglang:inter_token_latency_seconds", INTER_TOKEN_LATENCY_BUCKETS, series)
        self.latency = self.histogram("sglang:e2e_request_latency_seconds", E2E_LATENCY_BUCKETS, series)
        self.tokens = Counter("sglang:generation_tokens", "Generation tokens.", labels, registry=r).labels(
            model
        )
        # The series appears with the first abort, as in SGLang.
        self.aborts = Counter("sglang:num_aborted_requests", "Aborted requests.", labels, registry=r)
        self.queue = Gauge("sglang:num_queue_reqs", "Queued requests.", labels, registry=r).labels(model)
        self.responses = Counter(
            "sglang:http_responses", "HTTP responses.", ["endpoint", "status_code", "method"], registry=r
        )

    def answered(self, answer: Answer) -> None:
        self.ttft.observe(answer.ttft)
        for _ in range(answer.tokens - 1):  # one interval per token after the first
            self.itl.observe(answer.tpot)
        self.latency.observe(answer.latency, exemplar=self.exemplar)
        self.tokens.inc(answer.tokens)
        self.responses.labels(CHAT_ENDPOINT, "200", "POST").inc()

    def failed(self) -> None:
        self.responses.labels(CHAT_ENDPOINT, "500", "POST").inc(exemplar=self.exemplar)

    def aborted(self) -> None:
        self.aborts.labels(self.identity.model_name).inc()
        self.responses.labels(CHAT_ENDPOINT, "200", "POST").inc()

    def set_waiting(self, requests: int) -> None:
        self.queue.set(requests)
