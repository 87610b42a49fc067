"""Two adapters of one InferencePool share its Pods, and vLLM (and its simulator) label a LoRA
request's series with the base model's name: presets with source llm-d select each side by the model
the endpoint picker routed to (the adapter), and a source that selects by Pod is refused, naming the
field, rather than judging both sides on the same series; `modelgate status` names the adapter."""

from __future__ import annotations

import pytest

from modelgate.api import parse_spec
from modelgate.cli.render import side_name
from modelgate.metrics.promql_plan import analysis_plan
from testbed.manifests import model_rollout
from tests.support.bad_rollouts import ADAPTER_V1, ADAPTER_V2, adapters


def adapter_spec(metrics: list[dict[str, object]], source: str = "vllm") -> dict[str, object]:
    manifest = model_rollout(
        "chat", "serving", steps=[{"setWeight": 10}], prometheus="http://prometheus:9090", metrics=metrics
    )
    adapters(ADAPTER_V1, ADAPTER_V2)(manifest)
    manifest["spec"]["analysis"]["source"] = source
    return manifest["spec"]


ERRORS = {"name": "errors", "preset": "errorRate", "max": 0.05}
TTFT = {"name": "ttft", "preset": "ttftP99", "compare": {"maxRatio": 1.5}}


def test_llm_d_presets_select_each_adapter_by_its_target_model_name() -> None:
    plan = analysis_plan(parse_spec(adapter_spec([ERRORS, TTFT], source="llm-d")), "serving")
    assert 'target_model_name="chat-lora-v2"' in plan.metrics["errors"].candidate
    assert 'target_model_name="chat-lora-v1"' not in plan.metrics["errors"].candidate
    incumbent = plan.metrics["ttft"].incumbent
    assert incumbent is not None and 'target_model_name="chat-lora-v1"' in incumbent
    assert 'target_model_name="chat-lora-v2"' in plan.request_count
    # No Pod selector: the adapters' Pods are the same.
    assert "pod=~" not in plan.metrics["errors"].candidate + plan.request_count


def test_an_explicit_model_still_wins_over_the_adapter() -> None:
    spec = adapter_spec([ERRORS], source="llm-d")
    spec["candidate"] = {**ADAPTER_V2, "model": "reported-as"}  # type: ignore[index]
    plan = analysis_plan(parse_spec(spec), "serving")
    assert 'target_model_name="reported-as"' in plan.metrics["errors"].candidate


@pytest.mark.parametrize("source", ["vllm", "sglang", "tgi", "triton", "istio"])
def test_a_source_that_cannot_tell_adapters_apart_is_refused(source: str) -> None:
    with pytest.raises(ValueError, match="cannot tell two adapters") as refused:
        analysis_plan(parse_spec(adapter_spec([ERRORS], source=source)), "serving")
    assert "llm-d" in str(refused.value)


def test_one_metric_from_such_a_source_is_unbuildable_naming_its_field() -> None:
    vllm_errors = {**ERRORS, "name": "pod-errors", "source": "vllm"}
    plan = analysis_plan(parse_spec(adapter_spec([ERRORS, vllm_errors], source="llm-d")), "serving")
    assert set(plan.metrics) == {"errors"}
    assert plan.unbuildable["pod-errors"].startswith("spec.analysis.metrics[1].source")


def test_status_shows_an_adapter_side_by_its_adapter() -> None:
    assert side_name(ADAPTER_V2) == "adapter/chat-lora-v2"
    assert side_name({"inferencePool": "base"}) == "pool/base"
