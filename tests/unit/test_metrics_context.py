"""QueryContext: the only gate between spec values and PromQL text."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelgate.api import parse_duration
from modelgate.metrics.context import QueryContext, QueryContextError


def make(**overrides: str) -> QueryContext:
    values = {
        "namespace": "serving",
        "incumbent_deployment": "chat-v1",
        "candidate_deployment": "chat-v2",
        "analysis_interval": "30s",
    }
    values.update(overrides)
    return QueryContext.for_rollout(**values)


@pytest.mark.parametrize(
    ("analysis_interval", "window"),
    [("30s", "1m"), ("1m", "1m"), ("90s", "90s"), ("2m", "2m"), ("1m30s", "1m30s"), ("500ms", "1m")],
)
def test_window_is_analysis_interval_but_at_least_the_minimum(analysis_interval: str, window: str) -> None:
    assert make(analysis_interval=analysis_interval).interval == window


def test_minimum_window_is_configurable() -> None:
    ctx = QueryContext.for_rollout("serving", "chat-v1", "chat-v2", "30s", min_window="2m")
    assert ctx.interval == "2m"


@pytest.mark.parametrize(
    ("duration", "ms"), [("500ms", 500), ("30s", 30_000), ("5m", 300_000), ("1h30m", 5_400_000)]
)
def test_parse_duration(duration: str, ms: int) -> None:
    # One duration grammar for the spec and the query window.
    assert parse_duration(duration) == timedelta(milliseconds=ms)


@pytest.mark.parametrize("duration", ["", "30", "1d", "-1m", "1m ", "5m]", "5m\n", "1m)[5m"])
def test_invalid_durations_are_rejected(duration: str) -> None:
    with pytest.raises(QueryContextError, match="is not a duration"):
        make(analysis_interval=duration)


@pytest.mark.parametrize(("interval", "window"), [("1.5m", "90s"), ("90.5s", "90500ms"), ("2m", "2m")])
def test_fractional_intervals_become_whole_promql_durations(interval: str, window: str) -> None:
    # The CRD accepts Go's fractional durations; PromQL ranges take whole units only.
    assert make(analysis_interval=interval).interval == window


def test_zero_window_is_rejected() -> None:
    ctx = make()
    with pytest.raises(QueryContextError, match="longer than zero"):
        dataclasses.replace(ctx, interval="0s")


@pytest.mark.parametrize(
    "name",
    [
        'chat"}',
        'chat",pod=~".*',
        "Chat",
        "chat_v2",
        "-chat",
        "chat-",
        "chat v2",
        "chat\n",
        "chat{",
        "a" * 254,
    ],
)
def test_unsafe_deployment_names_are_rejected(name: str) -> None:
    with pytest.raises(QueryContextError, match="candidate deployment"):
        make(candidate_deployment=name)
    with pytest.raises(QueryContextError, match="incumbent deployment"):
        make(incumbent_deployment=name)


def test_dotted_deployment_names_are_valid() -> None:
    assert make(candidate_deployment="chat.v2").candidate_deployment == "chat.v2"


@pytest.mark.parametrize("namespace", ['serving"}', "serving.prod", "Serving", "", "a" * 64, "serving\n"])
def test_unsafe_namespaces_are_rejected(namespace: str) -> None:
    with pytest.raises(QueryContextError, match="namespace"):
        make(namespace=namespace)


@pytest.mark.parametrize(
    "regex",
    [
        'chat-.*"} or vector(0) or {x="',  # closes the string and the selector
        "chat-.*'",
        "chat-`",
        "chat-{2}",
        "chat-}",
        "chat\\.v2-.*",
        "chat-.*\n",  # a trailing newline slips past `$`-anchored patterns
        "chat-\n.*",
        "chat -.*",
        "",
        "a" * 257,
    ],
)
def test_unsafe_pod_regexes_are_rejected(regex: str) -> None:
    with pytest.raises(QueryContextError, match="candidate pod regex"):
        make(candidate_pod_regex=regex)
    with pytest.raises(QueryContextError, match="incumbent pod regex"):
        make(incumbent_pod_regex=regex)


@pytest.mark.filterwarnings("error")
def test_a_pod_regex_python_might_one_day_read_as_a_nested_set_is_accepted_without_a_warning() -> None:
    """`[[` is a plain `[` in a class for Prometheus (RE2); Python warns it may read it otherwise."""
    assert make(candidate_pod_regex="chat-[[v]2").candidate_pod_regex == "chat-[[v]2"


def test_pod_regex_that_does_not_compile_is_rejected() -> None:
    with pytest.raises(QueryContextError, match="does not compile"):
        make(candidate_pod_regex="(chat-v2-.*")


def test_direct_construction_is_validated_too() -> None:
    with pytest.raises(QueryContextError):
        QueryContext(
            namespace="serving",
            incumbent_deployment="chat-v1",
            candidate_deployment="chat-v2",
            incumbent_pod_regex="chat-v1-.*",
            candidate_pod_regex='x"',
            interval="1m",
        )


# Mostly safe characters, so that some inputs pass validation, mixed with every delimiter.
@given(st.text(alphabet="ab9-.*+?|()[]^$\"'`{}\\\n\r =~,"))
def test_accepted_values_cannot_contain_promql_delimiters(text: str) -> None:
    """Whatever the input, a value that passes validation has no character that ends a string or selector."""
    for field in ("namespace", "candidate_deployment", "candidate_pod_regex"):
        try:
            ctx = make(**{field: text})
        except QueryContextError:
            continue
        assert not set(getattr(ctx, field)) & set("\"'`{}\\\n\r")


def test_the_model_defaults_to_the_deployment_and_may_be_any_gateway_model_name() -> None:
    ctx = QueryContext.for_rollout(
        "ns", "chat", "chat-v2", "1m", candidate_model="meta-llama/Llama-3.1-8B:lora"
    )
    assert (ctx.model("incumbent"), ctx.model("candidate")) == ("chat", "meta-llama/Llama-3.1-8B:lora")


@pytest.mark.parametrize("model", ['chat"} or vector(1) or {a="', "chat v2", "-chat", "chat{1}", "x" * 254])
def test_unsafe_model_names_are_rejected(model: str) -> None:
    with pytest.raises(QueryContextError, match="candidate model"):
        QueryContext.for_rollout("ns", "chat", "chat-v2", "1m", candidate_model=model)
