"""What every stack's exporter records.

An exporter turns the double's outcomes into one serving stack's series, under that stack's exact
names and labels (docs/presets.md cites them). Each keeps a registry of its own, so that several
doubles may share a process. Latencies are observed for answered requests only.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.metrics_core import Metric
from prometheus_client.openmetrics import exposition as openmetrics

from testbed.request_traces import CURRENT_EXEMPLAR


@dataclass(frozen=True)
class Identity:
    """Who the double stands in for: the model it serves (the Deployment's name on the bed) and
    the namespace of its pods."""

    model_name: str
    namespace: str


@dataclass(frozen=True)
class Answer:
    """One answered request: `latency` (end to end) = `ttft` + (`tokens` - 1) x `tpot`."""

    ttft: float
    tpot: float
    tokens: int
    latency: float
    finish_reason: str


class Exporter:
    """The base of every stack's exporter, with a registry of its own."""

    def __init__(self, identity: Identity) -> None:
        self.identity = identity
        self.registry = CollectorRegistry()

    @property
    def exemplar(self) -> dict[str, str] | None:
        """The exemplar of the request being counted, {"trace_id": ...}, attached to the end-to-end
        latency and the error counter (OpenMetrics exemplars); None outside a request."""
        return CURRENT_EXEMPLAR.get()

    def histogram(self, name: str, buckets: Sequence[float], labels: Mapping[str, str]) -> Histogram:
        """The series of histogram `name` with these labels (their values fixed for this double)."""
        family = Histogram(name, name, list(labels), buckets=buckets, registry=self.registry)
        return family.labels(**labels)

    def answered(self, answer: Answer) -> None:
        raise NotImplementedError

    def failed(self) -> None:
        """The server failed the request (HTTP 500)."""
        raise NotImplementedError

    def aborted(self) -> None:
        """The client went away before the answer was complete."""
        raise NotImplementedError

    def set_waiting(self, requests: int) -> None:
        """Requests in the server's queue; stacks without a queue gauge ignore it."""

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class Registries:
    """Several registries collected as one, so that one OpenMetrics exposition (one `# EOF`) holds them."""

    def __init__(self, *registries: CollectorRegistry) -> None:
        self.registries = registries

    def collect(self) -> Iterator[Metric]:
        for registry in self.registries:
            yield from registry.collect()


def openmetrics_exposition(*registries: CollectorRegistry) -> bytes:
    """The OpenMetrics text, which carries exemplars (the classic text format cannot)."""
    # ALLOWUTF8 writes names as they are: the default escaping turns the colons of vLLM's names into
    # underscores (prometheus_client 0.26 checks sample names against the label-name characters).
    registry = Registries(*registries)
    exposition: bytes = openmetrics.generate_latest(registry, escaping=openmetrics.ALLOWUTF8)  # type: ignore[no-untyped-call]
    return exposition
