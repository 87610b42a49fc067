"""The query shapes the sources differ in, evaluated by Prometheus's engine over known series: bucket
bounds in either client's spelling, milliseconds, a request count made of two counters, selection by
target model and by destination workload; and which preset exists for which source."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import get_args

import pytest

from modelgate.api import parse_spec
from modelgate.api.analysis import MetricPreset, MetricSource
from modelgate.api.goodput_targets import GoodputTargets
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

CTX = QueryContext.for_rollout(  # the window: 1m
    "serving", "chat", "chat-v2", "30s", gateway_routes=("httproute/chat",), backends=("chat", "chat-v2")
)
PRICED = replace(
    CTX, incumbent_accelerators=1, candidate_accelerators=2, incumbent_price=2, candidate_price=2
)
TARGETS = GoodputTargets(ttft=0.5, tpot=0.05)
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


def test_llm_d_selects_by_target_model_in_the_rollouts_namespace(tmp_path: Path) -> None:
    model = "meta-llama/Llama-3.1-8B-Instruct"
    ctx = QueryContext.for_rollout("serving", "chat", "chat-v2", "30s", candidate_model=model)

    def picker(metric: str, target: str, namespace: str = "serving", **labels: str) -> str:
        return labelled(metric, namespace=namespace, pod="epp-0", target_model_name=target, **labels)

    series = {
        picker("inference_objective_request_total", model, priority="0"): counter(10),
        picker("inference_objective_request_error_total", model, error_code="ModelServerError"): counter(1),
        picker("inference_objective_output_tokens_sum", model): counter(250),
        picker("inference_objective_request_total", "chat-v2", priority="0"): counter(99),
        # Another namespace's picker routing to a model of the same name is not this rollout's.
        picker("inference_objective_request_total", model, "other-team", priority="0"): counter(1000),
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


def vllm_series(pod: str, finished_label: str, *, http: bool) -> dict[str, str]:
    """What vLLM (finished_label `finished_reason`, with its HTTP instrumentator) or llm-d's simulator
    (`finish_reason`, without) export for 10 finished requests a second, 1 of them aborted; vLLM's
    HTTP counter also counts 2 failed requests a second, which no engine counter sees."""
    labels = f'namespace="serving",pod="{pod}",model_name="chat-v2"'
    series = {
        f'vllm:request_success_total{{{labels},{finished_label}="stop"}}': counter(9),
        f'vllm:request_success_total{{{labels},{finished_label}="abort"}}': counter(1),
        f"vllm:e2e_request_latency_seconds_count{{{labels}}}": counter(10),
        f'vllm:inter_token_latency_seconds_bucket{{{labels},le="0.01"}}': counter(0),
        f'vllm:inter_token_latency_seconds_bucket{{{labels},le="0.025"}}': counter(100),
        f'vllm:inter_token_latency_seconds_bucket{{{labels},le="+Inf"}}': counter(100),
    }
    if http:
        series[f'http_requests_total{{namespace="serving",pod="{pod}",status="2xx"}}'] = counter(10)
        series[f'http_requests_total{{namespace="serving",pod="{pod}",status="5xx"}}'] = counter(2)
    return series


def test_vllm_presets_read_vllms_series_and_its_simulators(tmp_path: Path) -> None:
    tpot = preset_query("tpotP99", "vllm", CTX)
    assert_evaluates(
        tmp_path,
        vllm_series(POD_A, "finished_reason", http=True),
        {
            requests_query("vllm", CTX): one(12 * 60),
            preset_query("errorRate", "vllm", CTX): one(2 / 12),
            preset_query("abortRate", "vllm", CTX): one(1 / 12),
            tpot: one(0.02485),  # per token: 99% of the way through the bucket 0.01-0.025
        },
    )
    # The simulator counts no failed request: errors and aborts have no denominator, so no data,
    # never 0; the requests it finished still count against minRequests.
    assert_evaluates(
        tmp_path,
        vllm_series(POD_A, "finish_reason", http=False),
        {
            requests_query("vllm", CTX): one(10 * 60),
            preset_query("errorRate", "vllm", CTX): NO_DATA,
            preset_query("abortRate", "vllm", CTX): NO_DATA,
            tpot: one(0.02485),
        },
    )


def traefik_service(route_namespace: str, route: str, backend: str, index: int) -> str:
    """The service Traefik's Gateway provider names after one backendRef of an HTTPRoute's rule 0."""
    router = (
        f"httproute-{route_namespace}-{route}-gw-{route_namespace}-inference-ep-web-0-1c0cf64bde37d9d19df8"
    )
    return f"{router}-svc-{route_namespace}-{backend}-{index}@kubernetesgateway"


def test_traefik_tells_the_weighted_backends_of_the_route_apart(tmp_path: Path) -> None:
    def requests(service: str, code: str) -> str:
        return labelled(
            "traefik_service_requests_total", service=service, code=code, method="POST", protocol="http"
        )

    incumbent, candidate = (
        traefik_service("serving", "chat", "chat", 0),
        traefik_service("serving", "chat", "chat-v2", 1),
    )
    # The same backend name behind a route of another namespace is someone else's traffic.
    elsewhere = traefik_service("other", "chat", "chat-v2", 1)
    series = {
        requests(incumbent, "200"): counter(90),
        requests(incumbent, "503"): counter(1),
        requests(candidate, "200"): counter(9),
        requests(candidate, "503"): counter(1),
        requests(candidate, "499"): counter(0),
        requests(elsewhere, "503"): counter(50),
        **{
            labelled(
                "traefik_service_request_duration_seconds_bucket", service=candidate, code="200", le=le
            ): counter(9)
            for le in ("0.3", "1.2", "+Inf")
        },
        labelled("traefik_service_request_duration_seconds_count", service=candidate, code="200"): counter(9),
    }
    assert_evaluates(
        tmp_path,
        series,
        {
            requests_query("traefik", CTX): one(10 * 60),
            requests_query("traefik", CTX, "incumbent"): one(91 * 60),
            preset_query("errorRate", "traefik", CTX): one(0.1),
            preset_query("errorRate", "traefik", CTX, "incumbent"): one(1 / 91),
            preset_query("abortRate", "traefik", CTX): one(0),
            preset_query("slowRequestRate", "traefik", CTX, threshold=0.3): one(0),
        },
    )


def test_a_dot_in_a_traefik_backend_name_matches_a_dot_only(tmp_path: Path) -> None:
    ctx = QueryContext.for_rollout(
        "serving", "chat", "chat-v2", "30s", gateway_routes=("httproute/chat",), backends=("chat", "chat.v2")
    )

    def requests(backend: str) -> str:
        service = traefik_service("serving", "chat", backend, 1)
        return labelled("traefik_service_requests_total", service=service, code="200")

    series = {requests("chat.v2"): counter(10), requests("chatxv2"): counter(90)}
    assert_evaluates(tmp_path, series, {requests_query("traefik", ctx): one(10 * 60)})


def test_traefik_needs_gateway_api_routing_to_tell_the_sides_apart() -> None:
    spec = spec_with("traefik", {"name": "errors", "preset": "errorRate", "max": 0.01})
    spec["trafficRouting"] = {
        "istio": {
            "virtualService": "chat",
            "incumbentDestination": {"host": "a"},
            "candidateDestination": {"host": "b"},
        }
    }
    with pytest.raises(ValueError) as refused:
        analysis_plan(parse_spec(spec), "serving")
    assert str(refused.value).startswith("spec.analysis.metrics[0].preset (metric errors): source traefik")
    assert "spec.trafficRouting.gatewayAPI" in str(refused.value)


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
                preset_query(name, source, PRICED, threshold=1.0, goodput=TARGETS)
            assert str(refused.value).startswith(
                f"preset {name} does not exist for source {source}: {lacks[name]}"
            )
        else:
            assert preset_query(name, source, PRICED, threshold=1.0, goodput=TARGETS)


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


def test_a_preset_the_source_lacks_is_unbuildable_naming_the_field_and_the_others_are_built() -> None:
    spec = parse_spec(
        spec_with(
            "tgi",
            {"name": "errors", "preset": "errorRate", "max": 0.01},
            {"name": "ttft", "preset": "ttftP99", "max": 2},
        )
    )
    plan = analysis_plan(spec, "serving")
    assert list(plan.metrics) == ["errors"] and list(plan.unbuildable) == ["ttft"]
    message = plan.unbuildable["ttft"]
    assert message.startswith(
        "spec.analysis.metrics[1].preset (metric ttft): preset ttftP99 does not exist for source tgi"
    )
    assert STACKS["tgi"].lacks["ttftP99"] in message


def test_the_sources_are_the_apis() -> None:
    assert tuple(STACKS) == get_args(MetricSource)
    assert tuple(PRESETS) == get_args(MetricPreset)
