"""vLLM 0.34.0's series: vllm/v1/metrics/loggers.py and buckets.py, and the HTTP counter of
prometheus-fastapi-instrumentator (vllm/entrypoints/serve/instrumentator/metrics.py)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from testbed.exporters.base import Answer, Exporter, Identity

REQUEST_LATENCY_BUCKETS = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
    120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
)  # fmt: skip
TTFT_BUCKETS = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
INTER_TOKEN_LATENCY_BUCKETS = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0,
)  # fmt: skip
FINISHED_REASONS = ("stop", "length", "abort", "error", "repetition")
CHAT_HANDLER = "/v1/chat/completions"
# vLLM has no content_filter reason: the filter the double stands for cut an answer vLLM finished.
SERVER_FINISHED_REASON = {"content_filter": "stop"}


class VllmExporter(Exporter):
    def __init__(self, identity: Identity) -> None:
        super().__init__(identity)
        r, model = self.registry, identity.model_name
        labels = ["model_name", "engine"]

        series = {"model_name": model, "engine": "0"}
        self.ttft = self.histogram("vllm:time_to_first_token_seconds", TTFT_BUCKETS, series)
        self.tpot = self.histogram(
            "vllm:request_time_per_output_token_seconds", INTER_TOKEN_LATENCY_BUCKETS, series
        )
        self.inter_token = self.histogram(
            "vllm:inter_token_latency_seconds", INTER_TOKEN_LATENCY_BUCKETS, series
        )
        self.latency = self.histogram("vllm:e2e_request_latency_seconds", REQUEST_LATENCY_BUCKETS, series)
        self.tokens = Counter("vllm:generation_tokens", "Generation tokens.", labels, registry=r).labels(
            model, "0"
        )
        success = Counter(
            "vllm:request_success", "Finished requests.", [*labels, "finished_reason"], registry=r
        )
        # vLLM creates every finished_reason's series at start.
        self.finished = {reason: success.labels(model, "0", reason) for reason in FINISHED_REASONS}
        self.waiting = Gauge("vllm:num_requests_waiting", "Waiting requests.", labels, registry=r).labels(
            model, "0"
        )
        self.http = Counter("http_requests", "HTTP requests.", ["method", "handler", "status"], registry=r)

    def answered(self, answer: Answer) -> None:
        self.ttft.observe(answer.ttft)
        self.tpot.observe(answer.tpot)
        for _ in range(answer.tokens - 1):  # one gap between each two tokens, all alike here
            self.inter_token.observe(answer.tpot)
        self.latency.observe(answer.latency, exemplar=self.exemplar)
        self.tokens.inc(answer.tokens)
        self.finished[SERVER_FINISHED_REASON.get(answer.finish_reason, answer.finish_reason)].inc()
        self.http.labels("POST", CHAT_HANDLER, "200").inc()

    def failed(self) -> None:
        self.http.labels("POST", CHAT_HANDLER, "500").inc(exemplar=self.exemplar)

    def aborted(self) -> None:
        # A streamed answer had begun with 200 when the client went away.
        self.finished["abort"].inc()
        self.http.labels("POST", CHAT_HANDLER, "200").inc()

    def set_waiting(self, requests: int) -> None:
        self.waiting.set(requests)
