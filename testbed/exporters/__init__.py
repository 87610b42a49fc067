"""Per-stack exporters of the model server double, one module per serving stack, keyed like the
API's `source` (vllm, sglang, tgi, triton, llm-d, istio)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from testbed.exporters.base import Answer, Exporter, Identity
from testbed.exporters.istio import IstioExporter
from testbed.exporters.llmd import LlmdExporter
from testbed.exporters.sglang import SglangExporter
from testbed.exporters.tgi import TgiExporter
from testbed.exporters.triton import TritonExporter
from testbed.exporters.vllm import VllmExporter

EXPORTERS: Mapping[str, Callable[[Identity], Exporter]] = MappingProxyType(
    {
        "vllm": VllmExporter,
        "sglang": SglangExporter,
        "tgi": TgiExporter,
        "triton": TritonExporter,
        "llm-d": LlmdExporter,
        "istio": IstioExporter,
    }
)

__all__ = ["EXPORTERS", "Answer", "Exporter", "Identity"]
