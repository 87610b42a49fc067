"""Which series a metric preset reads, and which component exports each.

Which series a metric preset reads and which component exports each: what an Inconclusive metric
names when its data is missing because nobody exports a series, not because traffic is low."""

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from modelgate.api.statusmodel import StatusModel


class SeriesComponent(StrEnum):
    """What exports a series (docs/metric-presets.md says how to add each)."""

    VLLM_SERVER = "VLLMServer"
    VLLM_INSTRUMENTATOR = "VLLMInstrumentator"
    SGLANG_SERVER = "SGLangServer"
    TGI_SERVER = "TGIServer"
    TRITON_SERVER = "TritonServer"
    LLMD_ENDPOINT_PICKER = "LLMDEndpointPicker"
    ISTIO_PROXY = "IstioProxy"
    TRAEFIK_GATEWAY = "TraefikGateway"
    REFUSAL_SIDECAR = "RefusalSidecar"


COMPONENT_NAMES: Mapping[SeriesComponent, str] = MappingProxyType(
    {
        SeriesComponent.VLLM_SERVER: "the vLLM server (its /metrics)",
        SeriesComponent.VLLM_INSTRUMENTATOR: "vLLM's HTTP instrumentator (prometheus-fastapi-instrumentator, "
        "on by default in vLLM's API server; llm-d's simulator has none)",
        SeriesComponent.SGLANG_SERVER: "the SGLang server (--enable-metrics)",
        SeriesComponent.TGI_SERVER: "the TGI router (its /metrics)",
        SeriesComponent.TRITON_SERVER: "the Triton server (its metrics port)",
        SeriesComponent.LLMD_ENDPOINT_PICKER: "llm-d's endpoint picker (EPP)",
        SeriesComponent.ISTIO_PROXY: "the Istio sidecar of the model's pods (reporter=destination)",
        SeriesComponent.TRAEFIK_GATEWAY: "the Traefik gateway (its Prometheus metrics, on services)",
        SeriesComponent.REFUSAL_SIDECAR: "modelgate's refusal sidecar in the model's pods "
        "(docs/refusal-sidecar.md)",
    }
)

SeriesSide = Literal["candidate", "incumbent"]


class MissingSeries(StatusModel):
    """A series a metric reads that Prometheus has none of, for the sides named."""

    series: Annotated[str, StringConstraints(max_length=253)] = Field(
        description="The series' metric name, e.g. llm_requests_total."
    )
    provided_by: SeriesComponent = Field(description="The component that exports it.")
    sides: Annotated[
        tuple[Annotated[SeriesSide, Field(description="candidate or incumbent.")], ...],
        Field(min_length=1, max_length=2),
    ] = Field(description="The sides whose pods (or routes) have no such series.")

    def describe(self) -> str:
        sides = " and ".join(self.sides)
        return f"{self.series} ({sides}: none; exported by {COMPONENT_NAMES[self.provided_by]})"
