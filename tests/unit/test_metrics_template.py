"""Rendering `{{ variable }}` placeholders in user-written queries."""

from __future__ import annotations

import pytest

from modelgate.metrics.context import QueryContext
from modelgate.metrics.template import TEMPLATE_VARIABLES, TemplateError, render_query

CTX = QueryContext.for_rollout("serving", "chat-v1", "chat-v2", "2m", candidate_pod_regex="chat-v2-(a|b)-.*")


def test_every_variable_substitutes() -> None:
    template = (
        "{{namespace}} {{ incumbent.deployment }} {{  candidate.deployment}} "
        "{{incumbent.podRegex }} {{ candidate.podRegex }} {{\tinterval\t}}"
    )
    assert (
        render_query(template, CTX)
        == "serving chat-v1 chat-v2 chat-v1-[a-z0-9]+-[a-z0-9]+ chat-v2-(a|b)-.* 2m"
    )


def test_contract_example_renders() -> None:
    template = 'max(vllm:num_requests_waiting{pod=~"{{ candidate.podRegex }}"})'
    assert render_query(template, CTX) == 'max(vllm:num_requests_waiting{pod=~"chat-v2-(a|b)-.*"})'


def test_query_without_variables_is_unchanged() -> None:
    query = 'sum(rate(http_requests_total{namespace="serving"}[5m]))'
    assert render_query(query, CTX) == query


def test_repeated_variable_substitutes_everywhere() -> None:
    assert render_query("{{ interval }}/{{ interval }}", CTX) == "2m/2m"


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
        "interval",
    )
