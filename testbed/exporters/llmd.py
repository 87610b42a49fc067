"""The endpoint picker's series by target model: llm-d/llm-d-inference-scheduler at 520af47,
pkg/epp/metrics/metrics.go. In a cluster the picker exports them; on the bed each model double
does, which sums to the same. Scraped as its Pod's series, they carry the `namespace` but no picker
`service`: the presets read them for Deployment sides (testbed/endpoint_picker.py stands in for a
pool's picker)."""

from __future__ import annotations

from prometheus_client import Counter

from testbed.exporters.base import Answer, Exporter, Identity

GENERAL_LATENCY_BUCKETS = (
    0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6,
    8, 10, 15, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600,
)  # fmt: skip
TPOT_BUCKETS = (
    0.0005, 0.00205, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.125, 0.15, 0.2,
    0.3, 0.4, 0.5, 0.6, 0.8, 1, 1.5, 2, 3, 4.5, 6, 12, 18, 24, 30, 36, 48, 60, 90, 120, 180, 270, 360,
)  # fmt: skip
OUTPUT_TOKENS_BUCKETS = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


class LlmdExporter(Exporter):
    def __init__(self, identity: Identity) -> None:
        super().__init__(identity)
        r, model = self.registry, identity.model_name
        labels = ["model_name", "target_model_name"]

        self.requests = Counter(
            "inference_objective_request", "Requests.", [*labels, "priority"], registry=r
        ).labels(model, model, "0")
        # The series appears with the first error, as in the picker.
        self.errors = Counter(
            "inference_objective_request_error", "Errors.", [*labels, "error_code"], registry=r
        )
        series = {"model_name": model, "target_model_name": model}
        self.ttft = self.histogram(
            "inference_objective_request_ttft_seconds", GENERAL_LATENCY_BUCKETS, series
        )
        self.tpot = self.histogram("inference_objective_request_tpot_seconds", TPOT_BUCKETS, series)
        self.latency = self.histogram(
            "inference_objective_request_duration_seconds", GENERAL_LATENCY_BUCKETS, series
        )
        self.tokens = self.histogram("inference_objective_output_tokens", OUTPUT_TOKENS_BUCKETS, series)

    def answered(self, answer: Answer) -> None:
        self.requests.inc()
        self.ttft.observe(answer.ttft)
        self.tpot.observe(answer.tpot)
        self.latency.observe(answer.latency, exemplar=self.exemplar)
        self.tokens.observe(answer.tokens)

    def failed(self) -> None:
        self.requests.inc()
        model = self.identity.model_name
        self.errors.labels(model, model, "ModelServerError").inc(exemplar=self.exemplar)

    def aborted(self) -> None:
        self.requests.inc()  # the picker counts the request; nothing records the cancellation
