"""Two adapters of one InferencePool share its Pods, and vLLM (and its simulator) label a LoRA
request's series with the base model's name: presets with source llm-d select each side by the model
the endpoint picker routed to (the adapter), and a source that selects by Pod is refused, naming the
field, rather than judging both sides on the same series; `modelgate status` names the adapter.
Another team serving adapters of the same names (another namespace, or another pool's picker) is not
this rollout's: llm-d queries carry the namespace and the pool's endpoint picker Service."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelgate.api import parse_spec
from modelgate.cli.render.rollout import side_name
from modelgate.metrics.context import Side
from modelgate.metrics.promql_plan import analysis_plan
from modelgate.metrics.provider import AnalysisPlan
from testbed.manifests import model_rollout
from tests.support.bad_rollouts import ADAPTER_V1, ADAPTER_V2, adapters
from tests.support.promql import NO_DATA, assert_evaluates, counter, one


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


PICKER = "base-epp"  # the Service pool `base` names in spec.endpointPickerRef


def llm_d_plan(namespace: str, picker: str | None = PICKER) -> AnalysisPlan:
    pickers: dict[Side, str | None] = {"incumbent": picker, "candidate": picker}
    return analysis_plan(parse_spec(adapter_spec([ERRORS], source="llm-d")), namespace, pickers=pickers)


def picker_series(namespace: str, service: str, requests: float, errors: float) -> dict[str, str]:
    """What a picker routing `requests` a second to chat-lora-v2, `errors` of them failing, exports
    once scraped (the scrape adds `namespace` and `service`; the series carry the rest)."""
    scraped = (
        f'namespace="{namespace}",service="{service}",model_name="chat",target_model_name="chat-lora-v2"'
    )
    series = {f'inference_objective_request_total{{{scraped},priority="0"}}': counter(requests)}
    if errors:
        error = f'inference_objective_request_error_total{{{scraped},error_code="ModelServerError"}}'
        series[error] = counter(errors)
    return series


def test_each_teams_adapter_queries_see_only_its_own_requests(tmp_path: Path) -> None:
    # Team b's picker fails half its requests, and so does another pool's picker in team a's
    # namespace; team a's own picker fails none. All route to adapters of the same names.
    series = {
        **picker_series("team-a", PICKER, 10, 0),
        **picker_series("team-b", PICKER, 20, 10),
        **picker_series("team-a", "other-epp", 40, 20),
    }
    expected = {}
    for namespace, requests, error_rate in (("team-a", 10, 0.0), ("team-b", 20, 0.5)):
        plan = llm_d_plan(namespace)
        expected[plan.request_count] = one(requests * 60)
        expected[plan.metrics["errors"].candidate] = one(error_rate)
    assert_evaluates(tmp_path, series, expected)


def test_a_hostile_picker_name_is_matched_as_written(tmp_path: Path) -> None:
    """The picker's name comes from the cluster, not the spec: quotes, braces and backslashes stay
    inside the label value, and select the series whose label is exactly that."""
    hostile = 'epp"} or vector(1) or up{x="\\'
    written = hostile.replace("\\", "\\\\").replace('"', '\\"')  # as the exposition escapes it
    plan = llm_d_plan("team-a", hostile)
    series = {**picker_series("team-a", written, 10, 5), **picker_series("team-a", PICKER, 40, 0)}
    assert_evaluates(
        tmp_path, series, {plan.request_count: one(10 * 60), plan.metrics["errors"].candidate: one(0.5)}
    )


def test_a_pool_without_an_endpoint_picker_has_no_data_and_the_query_says_why(tmp_path: Path) -> None:
    plan = llm_d_plan("team-a", None)
    assert "InferencePool base names no endpointPickerRef Service" in plan.request_count
    assert_evaluates(tmp_path, picker_series("team-a", PICKER, 10, 0), {plan.request_count: NO_DATA})


def test_a_plan_without_the_cluster_still_keeps_to_the_rollouts_namespace(tmp_path: Path) -> None:
    """`modelgate replay` plans without looking the pools up: every picker of the namespace counts."""
    plan = analysis_plan(parse_spec(adapter_spec([ERRORS], source="llm-d")), "team-a")
    series = {
        **picker_series("team-a", PICKER, 10, 0),
        **picker_series("team-a", "other-epp", 40, 0),
        **picker_series("team-b", PICKER, 20, 0),
    }
    assert_evaluates(tmp_path, series, {plan.request_count: one(50 * 60)})


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
