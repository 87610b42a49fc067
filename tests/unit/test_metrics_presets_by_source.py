"""The query shapes the sources differ in, evaluated by Prometheus's engine over known series: bucket
bounds in either client's spelling, milliseconds, a request count made of two counters, selection by
target model and by destination workload; and which preset exists for which source."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from modelgate.api import parse_spec
from modelgate.api.analysis import MetricPreset, MetricSource
from modelgate.metrics.context import QueryContext
from modelgate.metrics.presets import (
    PRESETS,
    STACKS,
    UnknownPresetError,
    available,
    count_queries,
    preset_query,
)
from modelgate.metrics.presets import request_count_query as requests_query
from modelgate.metrics.promql_plan import analysis_plan
from tests.support.promql import NO_DATA, assert_evaluates, counter, one

CTX = QueryContext.for_rollout("serving", "chat", "chat-v2", "30s")  # the window: 1m
POD_A, POD_B = "chat-v2-5c4b3a2f1-xyz12", "chat-v2-5c4b3a2f1-uvw34"


def vllm_latency(pod: str, cumulative_per_second: dict[str, float]) -> dict[str, str]:
    series = {
        f'vllm:e2e_request_latency_seconds_bucket{{namespace="serving",pod="{pod}",le="{le}"}}': counter(rate)
        for le, rate in cumulative_per_second.items()
    }
    total = cumulative_per_second["+Inf"]
    return {
        **series,
        f'vllm:e2e_request_latency_seconds_count{{namespace="serving",pod="{pod}"}}': counter(total),
    }


def test_slow_request_rate_reads_the_threshold_bucket_as_either_client_spells_it(tmp_path: Path) -> None:
    # Python's client writes le="5.0", Go's le="5". 100 requests/s on each pod, 4 and 6 slower than 5 s.
    series = {
        **vllm_latency(POD_A, {"2.5": 90, "5.0": 96, "10.0": 100, "+Inf": 100}),
        **vllm_latency(POD_B, {"2.5": 90, "5": 94, "10": 100, "+Inf": 100}),
    }
    totals = count_queries("slowRequestRate", "vllm", CTX, "candidate", threshold=5.0)
    assert totals is not None
    assert_evaluates(
        tmp_path,
        series,
        {
            preset_query("slowRequestRate", "vllm", CTX, threshold=5.0): one(10 / 200),
            preset_query("slowRequestRate", "vllm", CTX, threshold=2.5): one(20 / 200),
            # Not a bucket bound: no data (Inconclusive), never a share that could pass.
            preset_query("slowRequestRate", "vllm", CTX, threshold=4.0): NO_DATA,
            # The sequential test's totals: all requests so far, and those slower than 5 s.
            totals.requests: one(200 * 300),
            totals.events: one(10 * 300),
        },
    )


def labelled(metric: str, **labels: str) -> str:
    return metric + "{" + ",".join(f'{key}="{value}"' for key, value in labels.items()) + "}"


def istio(metric: str, workload: str, reporter: str = "destination", **labels: str) -> str:
    where = {"destination_workload_namespace": "serving", "destination_workload": workload}
    return labelled(metric, reporter=reporter, **where, **labels)


def test_istio_selects_the_destination_report_of_the_workload_and_converts_milliseconds(
    tmp_path: Path,
) -> None:
    buckets = {"1000": 50, "2500": 96, "5000": 98, "10000": 100, "+Inf": 100}
    series = {
        **{
            istio("istio_request_duration_milliseconds_bucket", "chat-v2", le=le): counter(n)
            for le, n in buckets.items()
        },
        istio("istio_request_duration_milliseconds_count", "chat-v2"): counter(100),
        istio("istio_requests_total", "chat-v2", response_code="200", response_flags="-"): counter(95),
        istio("istio_requests_total", "chat-v2", response_code="503", response_flags="UF"): counter(3),
        istio("istio_requests_total", "chat-v2", response_code="0", response_flags="DC"): counter(2),
        # The client's proxy reports the same requests again; another workload has its own.
        istio(
            "istio_requests_total", "chat-v2", reporter="source", response_code="503", response_flags="-"
        ): counter(50),
        istio("istio_requests_total", "chat-v2-gpu", response_code="500", response_flags="-"): counter(50),
    }
    assert_evaluates(
        tmp_path,
        series,
        {
            # 98 of 100 within 5000 ms, all within 10000: the 99th lies halfway, at 7.5 s.
            preset_query("latencyP99", "istio", CTX): one(7.5),
            preset_query("slowRequestRate", "istio", CTX, threshold=2.5): one(0.04),
            preset_query("errorRate", "istio", CTX): one(0.03),
            preset_query("abortRate", "istio", CTX): one(0.02),
            requests_query("istio", CTX): one(100 * 60),
        },
    )


def test_triton_counts_successes_and_failures_as_requests(tmp_path: Path) -> None:
    labels = f'namespace="serving",pod="{POD_A}",model="chat",version="1"'
    series = {
        f"nv_inference_request_success{{{labels}}}": counter(16),
        f'nv_inference_request_failure{{{labels},reason="BACKEND"}}': counter(3),
        f'nv_inference_request_failure{{{labels},reason="REJECTED"}}': counter(1),
        f'nv_inference_request_failure{{{labels},reason="CANCELED"}}': counter(0),
        f'nv_inference_request_failure{{{labels},reason="OTHER"}}': counter(0),
    }
    assert_evaluates(
        tmp_path,
        series,
        {
            preset_query("errorRate", "triton", CTX): one(4 / 20),
            preset_query("abortRate", "triton", CTX): one(0),
            requests_query("triton", CTX): one(20 * 60),
        },
    )


def test_llm_d_selects_by_target_model(tmp_path: Path) -> None:
    model = "meta-llama/Llama-3.1-8B-Instruct"
    ctx = QueryContext.for_rollout("serving", "chat", "chat-v2", "30s", candidate_model=model)

    def picker(metric: str, target: str, **labels: str) -> str:
        return labelled(metric, namespace="gateway", pod="epp-0", target_model_name=target, **labels)

    series = {
        picker("inference_objective_request_total", model, priority="0"): counter(10),
        picker("inference_objective_request_error_total", model, error_code="ModelServerError"): counter(1),
        picker("inference_objective_output_tokens_sum", model): counter(250),
        picker("inference_objective_request_total", "chat-v2", priority="0"): counter(99),
    }
    assert_evaluates(
        tmp_path,
        series,
        {
            preset_query("errorRate", "llm-d", ctx): one(0.1),
            preset_query("tokensPerSecond", "llm-d", ctx): one(250),
            requests_query("llm-d", ctx): one(10 * 60),
            # Without spec.candidate.model, the Deployment's name is the target model.
            requests_query("llm-d", CTX): one(99 * 60),
        },
    )


def test_queue_depth_is_the_busiest_pods_mean_queue(tmp_path: Path) -> None:
    series = {
        f'tgi_queue_size{{namespace="serving",pod="{POD_A}"}}': "3x20",
        f'tgi_queue_size{{namespace="serving",pod="{POD_B}"}}': "5x20",
    }
    assert_evaluates(tmp_path, series, {preset_query("queueDepth", "tgi", CTX): one(5)})


@pytest.mark.parametrize("source", STACKS)
def test_each_preset_exists_for_a_source_or_says_why_not(source: str) -> None:
    lacks = STACKS[source].lacks
    assert set(lacks) <= set(PRESETS)
    assert set(available(source)) == set(PRESETS) - set(lacks)
    for name in PRESETS:
        if name in lacks:
            with pytest.raises(UnknownPresetError) as refused:
                preset_query(name, source, CTX, threshold=1.0)
            assert str(refused.value).startswith(
                f"preset {name} does not exist for source {source}: {lacks[name]}"
            )
        else:
            assert preset_query(name, source, CTX, threshold=1.0)


def spec_with(source: str, *metrics: dict[str, object]) -> dict[str, object]:
    return {
        "incumbent": {"deployment": "chat"},
        "candidate": {"deployment": "chat-v2"},
        "trafficRouting": {
            "gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "a", "candidateBackend": "b"}
        },
        "steps": [{"setWeight": 10}],
        "analysis": {
            "prometheus": {"address": "http://prometheus:9090"},
            "source": source,
            "metrics": list(metrics),
        },
    }


def test_the_plan_reads_the_rollouts_source_unless_a_metric_names_its_own() -> None:
    spec = parse_spec(
        spec_with(
            "tgi",
            {"name": "errors", "preset": "errorRate", "max": 0.01},
            {"name": "ttft", "preset": "ttftP99", "source": "vllm", "max": 2},
        )
    )
    plan = analysis_plan(spec, "serving")
    assert plan.request_count == requests_query("tgi", CTX)
    assert plan.metrics["errors"].candidate == preset_query("errorRate", "tgi", CTX)
    assert plan.metrics["ttft"].candidate == preset_query("ttftP99", "vllm", CTX)


def test_a_preset_the_source_lacks_fails_the_plan_naming_the_field() -> None:
    spec = parse_spec(
        spec_with(
            "tgi",
            {"name": "errors", "preset": "errorRate", "max": 0.01},
            {"name": "ttft", "preset": "ttftP99", "max": 2},
        )
    )
    with pytest.raises(ValueError) as refused:
        analysis_plan(spec, "serving")
    message = str(refused.value)
    assert message.startswith(
        "spec.analysis.metrics[1].preset (metric ttft): preset ttftP99 does not exist for source tgi"
    )
    assert STACKS["tgi"].lacks["ttftP99"] in message


def test_the_sources_are_the_apis() -> None:
    assert tuple(STACKS) == get_args(MetricSource)
    assert tuple(PRESETS) == get_args(MetricPreset)
