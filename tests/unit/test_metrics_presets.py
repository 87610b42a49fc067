"""What each preset's PromQL measures, evaluated by Prometheus's engine over known series."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelgate.api import parse_spec
from modelgate.api.analysis import LATENCY_PRESETS, RATE_PRESETS
from modelgate.metrics.context import QueryContext
from modelgate.metrics.presets import (
    PRESETS,
    UnknownPresetError,
    count_queries,
    get_preset,
    preset_query,
    request_count_query,
)
from modelgate.metrics.promql_plan import analysis_plan
from tests.support.promql import NO_DATA, assert_evaluates, counter, one

# Incumbent `chat` and candidate `chat-v2` share a prefix: the default pod regexes must still
# keep their pods apart. Pod names are `<deployment>-<pod-template-hash>-<suffix>`.
INCUMBENT_PODS = ("chat-7d9f8c6b5-abcde", "chat-7d9f8c6b5-fghij")
CANDIDATE_PODS = ("chat-v2-5c4b3a2f1-xyz12", "chat-v2-5c4b3a2f1-uvw34")
CTX = QueryContext.for_rollout("serving", "chat", "chat-v2", "30s")  # the window: 1m
VLLM = "vllm"


def requests(namespace: str, pod: str, status: str) -> str:
    return f'http_requests_total{{namespace="{namespace}",pod="{pod}",status="{status}"}}'


def latency_buckets(pod: str, cumulative_per_second: dict[str, float]) -> dict[str, str]:
    return {
        f'vllm:e2e_request_latency_seconds_bucket{{namespace="serving",pod="{pod}",le="{le}"}}': counter(rate)
        for le, rate in cumulative_per_second.items()
    }


def refusals(namespace: str, pod: str) -> str:
    return f'llm_refusals_total{{namespace="{namespace}",pod="{pod}"}}'


def proxied(namespace: str, pod: str) -> str:
    """Completion requests the refusal proxy in the pod counted."""
    return f'llm_requests_total{{namespace="{namespace}",pod="{pod}",code="200"}}'


candidate_a, candidate_b = CANDIDATE_PODS
incumbent_a, incumbent_b = INCUMBENT_PODS
SERIES: dict[str, str] = {
    # Candidate: 16 requests/s, 2 of them 5xx (one "503", one grouped "5xx"); a 429 is no error.
    requests("serving", candidate_a, "200"): counter(7),
    requests("serving", candidate_a, "503"): counter(1),
    requests("serving", candidate_b, "200"): counter(6),
    requests("serving", candidate_b, "429"): counter(1),
    requests("serving", candidate_b, "5xx"): counter(1),
    refusals("serving", candidate_a): counter(1),
    refusals("serving", candidate_b): counter(1),
    proxied("serving", candidate_a): counter(8),
    proxied("serving", candidate_b): counter(8),
    # 100 requests/s: 90 within 0.5s, ..., 98 within 5s, all within 10s; summed over both pods.
    **latency_buckets(candidate_a, {"0.5": 45, "1": 48, "2.5": 48, "5": 49, "10": 50, "+Inf": 50}),
    **latency_buckets(candidate_b, {"0.5": 45, "1": 48, "2.5": 49, "5": 49, "10": 50, "+Inf": 50}),
    # Incumbent: 20 requests/s, half of them 500; refusals counted but none yet; 96% within 5s.
    requests("serving", incumbent_a, "200"): counter(10),
    requests("serving", incumbent_b, "500"): counter(10),
    refusals("serving", incumbent_a): counter(0),
    proxied("serving", incumbent_a): counter(20),
    **latency_buckets(incumbent_a, {"0.5": 0, "1": 0, "2.5": 0, "5": 96, "10": 100, "+Inf": 100}),
    # Decoys the candidate's selector must not pick up: another namespace's pod of the same name,
    # and the pod of a Deployment `chat-v2-gpu`.
    requests("other", candidate_a, "500"): counter(100),
    requests("serving", "chat-v2-gpu-6b5a4c3d2-qrs56", "500"): counter(100),
    # Namespace `healthy`: requests, never an error, no refusal counter exported.
    requests("healthy", candidate_a, "200"): counter(4),
}
# Namespace `idle` has no series at all.
HEALTHY = QueryContext.for_rollout("healthy", "chat", "chat-v2", "30s")
IDLE = QueryContext.for_rollout("idle", "chat", "chat-v2", "30s")


def test_error_rate_is_the_share_of_5xx_answers(tmp_path: Path) -> None:
    assert_evaluates(
        tmp_path,
        SERIES,
        {
            preset_query("errorRate", VLLM, CTX): one(2 / 16),
            preset_query("errorRate", VLLM, CTX, side="incumbent"): one(10 / 20),
        },
    )


def test_error_rate_without_any_5xx_series_is_zero_and_without_requests_no_data(tmp_path: Path) -> None:
    # A healthy candidate never creates a 5xx series; no requests at all must not look healthy.
    assert_evaluates(
        tmp_path,
        SERIES,
        {preset_query("errorRate", VLLM, HEALTHY): one(0), preset_query("errorRate", VLLM, IDLE): NO_DATA},
    )


def test_latency_p99_interpolates_in_the_bucket_holding_the_99th_request(tmp_path: Path) -> None:
    # Candidate: 98 of 100 within 5s, 100 within 10s: the 99th lies halfway, at 7.5s.
    # Incumbent: 96 within 5s, 100 within 10s: the 99th lies three quarters in, at 8.75s.
    assert_evaluates(
        tmp_path,
        SERIES,
        {
            preset_query("latencyP99", VLLM, CTX): one(7.5),
            preset_query("latencyP99", VLLM, CTX, side="incumbent"): one(8.75),
            preset_query("latencyP99", VLLM, IDLE): NO_DATA,
        },
    )


def test_refusal_rate_is_the_share_of_refused_requests(tmp_path: Path) -> None:
    assert_evaluates(
        tmp_path,
        SERIES,
        {
            preset_query("refusalRate", VLLM, CTX): one(2 / 16),
            preset_query("refusalRate", VLLM, CTX, side="incumbent"): one(0),
            # No refusal counter exported: no data, never a healthy 0.
            preset_query("refusalRate", VLLM, HEALTHY): NO_DATA,
        },
    )


def test_request_count_is_each_sides_requests_in_the_window(tmp_path: Path) -> None:
    # Each side counts only its own pods: `chat`'s regex must not take in `chat-v2-...`, and
    # `chat-v2`'s neither `chat-...` nor `chat-v2-gpu-...` nor the other namespace's pods.
    assert_evaluates(
        tmp_path,
        SERIES,
        {
            request_count_query(VLLM, CTX): one(16 * 60),
            request_count_query(VLLM, CTX, side="incumbent"): one(20 * 60),
            request_count_query(VLLM, IDLE): NO_DATA,
        },
    )


def test_the_sequential_tests_counts_are_each_sides_totals_as_last_scraped(tmp_path: Path) -> None:
    # At 5m each counter has grown for 300s: exact totals, no window and no extrapolation.
    sides = ("candidate", "incumbent")
    candidate, incumbent = (count_queries("errorRate", VLLM, CTX, side) for side in sides)
    healthy, idle = (count_queries("errorRate", VLLM, ctx, "candidate") for ctx in (HEALTHY, IDLE))
    assert candidate and incumbent and healthy and idle
    assert_evaluates(
        tmp_path,
        SERIES,
        {
            candidate.requests: one(16 * 300),
            candidate.events: one(2 * 300),
            incumbent.requests: one(20 * 300),
            incumbent.events: one(10 * 300),
            # Without a 5xx series yet, no errors; without requests, no data (the test waits).
            healthy.events: one(0),
            idle.requests: NO_DATA,
        },
    )


def test_a_5xx_series_that_appears_with_its_first_error_counts_it(tmp_path: Path) -> None:
    # increase() sees one sample of the new series and gives 0; the total is 1.
    first_error = {
        requests("serving", candidate_a, "200"): counter(7),
        requests("serving", candidate_a, "500"): "_x19 1",
    }
    queries = count_queries("errorRate", VLLM, CTX, "candidate")
    assert queries is not None
    assert_evaluates(tmp_path, first_error, {queries.events: one(1), queries.requests: one(7 * 300 + 1)})


def test_window_and_custom_regex_flow_into_the_query(tmp_path: Path) -> None:
    two_minutes = QueryContext.for_rollout("serving", "chat", "chat-v2", "2m")
    one_pod_each = QueryContext.for_rollout(
        "serving", "chat", "chat-v2", "30s", incumbent_pod_regex=incumbent_a, candidate_pod_regex=candidate_a
    )
    assert_evaluates(
        tmp_path,
        SERIES,
        {
            request_count_query(VLLM, two_minutes): one(16 * 120),
            request_count_query(VLLM, one_pod_each): one(8 * 60),
            request_count_query(VLLM, one_pod_each, side="incumbent"): one(10 * 60),
        },
    )


def test_the_reconcilers_queries_measure_the_specs_deployments(tmp_path: Path) -> None:
    spec = parse_spec(
        {
            "incumbent": {"deployment": "chat"},
            "candidate": {"deployment": "chat-v2"},
            "trafficRouting": {
                "gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "chat", "candidateBackend": "chat-v2"}
            },
            "steps": [{"setWeight": 10}],
            "analysis": {
                "interval": "30s",
                "prometheus": {"address": "http://prometheus:9090"},
                "metrics": [
                    {"name": "errors", "preset": "errorRate", "max": 0.01},
                    {
                        "name": "refusals-per-second",
                        "query": 'sum(rate(llm_refusals_total{namespace="{{ namespace }}",'
                        'pod=~"{{ candidate.podRegex }}"}[{{ interval }}]))',
                        "max": 1,
                    },
                ],
            },
        }
    )
    queries = analysis_plan(spec, "serving")
    assert_evaluates(
        tmp_path,
        SERIES,
        {
            queries.request_count: one(16 * 60),
            queries.metrics["errors"].candidate: one(2 / 16),
            queries.metrics["refusals-per-second"].candidate: one(2),
        },
    )


def test_registry_holds_the_apis_preset_names_with_units() -> None:
    units = {name: preset.unit for name, preset in PRESETS.items()}
    assert units == {
        **dict.fromkeys(RATE_PRESETS, "ratio"),
        **dict.fromkeys(LATENCY_PRESETS, "seconds"),
        "tokensPerSecond": "tokens/s",
        "queueDepth": "requests",
        "goodputPerAccelerator": "requests/s",
        "goodputTokensPerAccelerator": "tokens/s",
        "costPerMillionTokens": "price",
    }
    assert all(preset.description for preset in PRESETS.values())
    assert get_preset("latencyP99").name == "latencyP99"


@pytest.mark.parametrize("name", ["error_rate", "ErrorRate", "latencyP95", ""])
def test_unknown_preset_error_lists_known_presets(name: str) -> None:
    with pytest.raises(UnknownPresetError) as excinfo:
        preset_query(name, VLLM, CTX)
    assert str(excinfo.value) == f"unknown metric preset {name!r}; known presets: {', '.join(PRESETS)}"
