"""Rendering `{{ variable }}` placeholders in user-written queries."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelgate.metrics.context import QueryContext
from modelgate.metrics.template import TEMPLATE_VARIABLES, TemplateError, render_query
from tests.support.promql import assert_evaluates, counter, one

CTX = QueryContext.for_rollout("serving", "chat-v1", "chat-v2", "2m", candidate_pod_regex="chat-v2-(a|b)-.*")

# Known series the rendered queries are evaluated over (tests/support/promql.py).
SERIES = {
    'vllm:num_requests_waiting{namespace="serving",pod="chat-v2-a-1"}': "3+0x20",
    'vllm:num_requests_waiting{namespace="serving",pod="chat-v2-b-1"}': "5+0x20",
    'vllm:num_requests_waiting{namespace="serving",pod="chat-v2-c-1"}': "40+0x20",
    'vllm:num_requests_waiting{namespace="serving",pod="chat-v1-7d9f8c6b5-abcde"}': "7+0x20",
    'vllm:num_requests_waiting{namespace="other",pod="chat-v2-a-1"}': "1+0x20",
    'kube_deployment_spec_replicas{namespace="serving",deployment="chat-v1"}': "4+0x20",
    'kube_deployment_spec_replicas{namespace="serving",deployment="chat-v2"}': "2+0x20",
    'http_requests_total{namespace="serving",pod="chat-v2-a-1",status="200"}': counter(3),
    'http_requests_total{namespace="serving",pod="chat-v2-b-1",status="500"}': counter(1),
}


def test_pod_regex_variables_select_each_sides_pods(tmp_path: Path) -> None:
    # The regex takes chat-v2-a-* and chat-v2-b-* (in every namespace, unless the query names
    # one), never chat-v2-c-* nor chat-v1's pods.
    assert_evaluates(
        tmp_path,
        SERIES,
        {
            render_query('sum(vllm:num_requests_waiting{pod=~"{{ candidate.podRegex }}"})', CTX): one(9),
            render_query(
                'sum(vllm:num_requests_waiting{namespace="{{namespace}}",pod=~"{{ candidate.podRegex }}"})',
                CTX,
            ): one(8),
            render_query(
                'sum(vllm:num_requests_waiting{namespace="{{ namespace }}",pod=~"{{incumbent.podRegex }}"})',
                CTX,
            ): one(7),
        },
    )


def test_deployment_variables_name_each_side(tmp_path: Path) -> None:
    replicas = (
        'sum(kube_deployment_spec_replicas{namespace="{{ namespace }}",deployment="{{ %s.deployment }}"})'
    )
    assert_evaluates(
        tmp_path,
        SERIES,
        {
            render_query(replicas % "incumbent", CTX): one(4),
            render_query(replicas % "candidate", CTX): one(2),
        },
    )


def test_interval_is_the_range_window_and_a_variable_repeats(tmp_path: Path) -> None:
    # A user-written error rate: the regex and the window appear twice each; over 2m, not 1m.
    rate = 'sum(increase(http_requests_total{pod=~"{{ candidate.podRegex }}"%s}[{{\tinterval\t}}]))'
    error_rate = (rate % ',status=~"5.."') + " / " + (rate % "")
    assert_evaluates(
        tmp_path,
        SERIES,
        {render_query(rate % "", CTX): one(4 * 120), render_query(error_rate, CTX): one(1 / 4)},
    )


def test_query_without_variables_is_unchanged() -> None:
    query = 'sum(rate(http_requests_total{namespace="serving"}[5m]))'
    assert render_query(query, CTX) == query


def test_unknown_variable_is_named_and_known_ones_listed() -> None:
    with pytest.raises(TemplateError) as excinfo:
        render_query('up{pod=~"{{ candidate.podregex }}"}', CTX)
    message = str(excinfo.value)
    assert "'candidate.podregex'" in message
    for name in TEMPLATE_VARIABLES:
        assert name in message


def test_empty_placeholder_is_an_unknown_variable() -> None:
    with pytest.raises(TemplateError, match="unknown variable ''"):
        render_query("up{ {{ }} }", CTX)


@pytest.mark.parametrize("template", ["up[{{ interval }]", "up[{{ interval ]", "{{ namespace"])
def test_malformed_placeholder_is_rejected(template: str) -> None:
    with pytest.raises(TemplateError):
        render_query(template, CTX)


def test_template_variables_list_the_documented_names() -> None:
    assert TEMPLATE_VARIABLES == (
        "namespace",
        "incumbent.deployment",
        "candidate.deployment",
        "incumbent.podRegex",
        "candidate.podRegex",
        "target.deployment",
        "target.podRegex",
        "interval",
        "incumbent.accelerators",
        "candidate.accelerators",
        "target.accelerators",
    )
