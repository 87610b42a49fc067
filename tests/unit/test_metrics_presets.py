"""The exact PromQL each preset produces."""

from __future__ import annotations

import pytest

from modelgate.metrics.context import QueryContext
from modelgate.metrics.presets import (
    PRESETS,
    UnknownPresetError,
    get_preset,
    preset_query,
    request_count_query,
)

CTX = QueryContext.for_rollout("serving", "chat-v1", "chat-v2", "30s")
CANDIDATE = 'namespace="serving",pod=~"chat-v2-[a-z0-9]+-[a-z0-9]+"'
INCUMBENT = 'namespace="serving",pod=~"chat-v1-[a-z0-9]+-[a-z0-9]+"'


def test_error_rate() -> None:
    assert preset_query("errorRate", CTX) == (
        f'(sum(rate(http_requests_total{{{CANDIDATE},status=~"5.."}}[1m])) or vector(0))'
        f" / sum(rate(http_requests_total{{{CANDIDATE}}}[1m]))"
    )


def test_latency_p99() -> None:
    assert preset_query("latencyP99", CTX) == (
        "histogram_quantile(0.99, sum by (le) "
        f"(rate(vllm:e2e_request_latency_seconds_bucket{{{CANDIDATE}}}[1m])))"
    )


def test_refusal_rate() -> None:
    assert preset_query("refusalRate", CTX) == (
        f"sum(rate(llm_refusals_total{{{CANDIDATE}}}[1m]))"
        f" / sum(rate(http_requests_total{{{CANDIDATE}}}[1m]))"
    )


def test_request_count() -> None:
    assert request_count_query(CTX) == f"sum(increase(http_requests_total{{{CANDIDATE}}}[1m]))"


def test_incumbent_variants_select_the_incumbent_pods() -> None:
    assert request_count_query(CTX, "incumbent") == f"sum(increase(http_requests_total{{{INCUMBENT}}}[1m]))"
    for name in PRESETS:
        assert preset_query(name, CTX, "incumbent") == preset_query(name, CTX).replace(CANDIDATE, INCUMBENT)


def test_window_and_custom_regex_flow_into_the_query() -> None:
    ctx = QueryContext.for_rollout("ml", "a", "b", "5m", candidate_pod_regex="b-gpu-.*")
    assert (
        request_count_query(ctx) == 'sum(increase(http_requests_total{namespace="ml",pod=~"b-gpu-.*"}[5m]))'
    )


def test_registry_holds_the_contract_names_with_units() -> None:
    assert {name: preset.unit for name, preset in PRESETS.items()} == {
        "errorRate": "ratio",
        "latencyP99": "seconds",
        "refusalRate": "ratio",
    }
    assert all(preset.description for preset in PRESETS.values())
    assert get_preset("latencyP99").name == "latencyP99"


@pytest.mark.parametrize("name", ["error_rate", "ErrorRate", "latencyP95", ""])
def test_unknown_preset_error_lists_known_presets(name: str) -> None:
    with pytest.raises(UnknownPresetError) as excinfo:
        preset_query(name, CTX)
    assert str(excinfo.value) == (
        f"unknown metric preset {name!r}; known presets: errorRate, latencyP99, refusalRate"
    )
