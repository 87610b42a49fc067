"""The chart's refusal-proxy values: the sidecar container it renders for model Deployments runs the
proxy with arguments `modelgate refusal-proxy` accepts, listens where its ports say, and reads the
patterns rendered beside it."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from modelgate.api.object_storage import AWS_PREFIX, secret_environment
from modelgate.chat_answers import Answer, Choice
from modelgate.cli.main import build_parser
from modelgate.cli.refusal_proxy_recording import SOURCE_ENV, recording_settings
from modelgate.refusal_classifier import RefusalReason, classify, parse_patterns
from tests.unit.test_chart import COMBINATIONS, REPOSITORY, Object, of_kind, render, render_error


def sidecar_config(objects: list[Object]) -> Object | None:
    found = [
        o for o in of_kind(objects, "ConfigMap") if o["metadata"]["name"] == "mg-modelgate-refusal-proxy"
    ]
    return found[0] if found else None


def rendered_container(values: Object) -> tuple[Object, dict[str, Any]]:
    config = sidecar_config(render(values))
    assert config is not None
    return yaml.safe_load(config["data"]["container.yaml"]), config["data"]


def test_nothing_is_rendered_unless_enabled() -> None:
    assert sidecar_config(render()) is None


def test_the_container_runs_the_proxy_on_every_interface_in_front_of_the_server() -> None:
    container, data = rendered_container(COMBINATIONS["refusalProxy"])
    assert set(data) == {"container.yaml"}
    assert container["image"] == f"{REPOSITORY}:0.1.0"
    args = build_parser().parse_args([*container["command"][1:], *container["args"]])
    assert args.command == "refusal-proxy"
    assert (args.upstream, args.host, args.model, args.patterns_file) == (
        "http://127.0.0.1:8000",
        "0.0.0.0",
        ["llama-3.1-8b"],
        None,
    )
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"proxy": args.port, "refusal-metrics": args.metrics_port}
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "refusal-metrics"}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["runAsNonRoot"] is True
    assert container["resources"]["requests"] and container["resources"]["limits"]


def test_patterns_are_rendered_for_the_file_the_container_reads() -> None:
    values = COMBINATIONS["everything"]
    container, data = rendered_container(values)
    args = build_parser().parse_args([*container["command"][1:], *container["args"]])
    (mount,) = container["volumeMounts"]
    assert args.patterns_file.parent.as_posix() == mount["mountPath"] and mount["name"] == "refusal-patterns"
    assert args.model == ["chat: v2"] and args.port == 8081
    assert container["image"] == f"{REPOSITORY}:0.1.1"
    patterns = parse_patterns(data[args.patterns_file.name], "patterns.txt")
    assert classify(Answer("m", (Choice("nope.", "stop"),)), patterns) is RefusalReason.PATTERN
    assert len(patterns.compiled) == len(values["refusalProxy"]["patterns"])


def test_the_connection_limits_are_the_proxys_defaults_unless_set() -> None:
    defaults = build_parser().parse_args(["refusal-proxy"])
    chart_defaults = rendered_args(COMBINATIONS["refusalProxy"])
    limits = ("max_connections", "header_timeout", "idle_timeout", "upstream_read_timeout")
    assert [getattr(chart_defaults, name) for name in limits] == [getattr(defaults, name) for name in limits]
    values = {
        "maxConnections": 32,
        "headerTimeoutSeconds": 5,
        "idleTimeoutSeconds": 600,
        "upstreamReadTimeoutSeconds": 1.5,
    }
    chosen = rendered_args({"refusalProxy": {"enabled": True, **values}})
    assert [getattr(chosen, name) for name in limits] == [32, 5, 600, 1.5]


def rendered_args(values: Object) -> Any:
    container, _ = rendered_container(values)
    return build_parser().parse_args([*container["command"][1:], *container["args"]])


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"patterns": ["# a comment"]}, "at '/refusalProxy/patterns/0'"),
        ({"patterns": ["two\nlines"]}, "at '/refusalProxy/patterns/0'"),
        ({"metricsPort": 70000}, "at '/refusalProxy/metricsPort': maximum"),
        ({"model": "x"}, "additional properties 'model' not allowed"),
        ({"maxConnections": 0}, "at '/refusalProxy/maxConnections': minimum"),
        ({"headerTimeoutSeconds": 0}, "at '/refusalProxy/headerTimeoutSeconds'"),
    ],
)
def test_schema_rejects_wrong_refusal_proxy_values_naming_the_field(values: Object, message: str) -> None:
    assert message in render_error({"refusalProxy": {"enabled": True, **values}})


def test_recording_is_off_unless_a_url_is_set() -> None:
    container, _ = rendered_container(COMBINATIONS["refusalProxy"])
    args = build_parser().parse_args([*container["command"][1:], *container["args"]])
    assert recording_settings(args) is None
    assert {e["name"] for e in container["env"]} == {"PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED"}


def test_recording_values_reach_the_proxy_and_the_secret_reaches_its_environment() -> None:
    recording = {
        "url": "s3://samples/prod/chat",
        "rate": 0.1,
        "maxBytes": 5_000_000,
        "redactPatterns": [r"acct-\d+"],
        "secret": "sample-store",
    }
    container, _ = rendered_container({"refusalProxy": {"enabled": True, "recording": recording}})
    args = build_parser().parse_args([*container["command"][1:], *container["args"]])
    assert (args.record, args.record_rate, args.record_max_bytes) == (
        "s3://samples/prod/chat",
        0.1,
        5_000_000,
    )
    assert args.redact_pattern == [r"acct-\d+"]
    env = [e for e in container["env"] if e["name"].startswith(AWS_PREFIX)]
    # The evaluator's Jobs take a storage Secret the same way: the same keys, the same optional ones.
    assert sorted(env, key=str) == sorted(secret_environment(AWS_PREFIX, "sample-store"), key=str)
    (pod_name,) = [e for e in container["env"] if e["name"] in SOURCE_ENV]
    assert pod_name["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.name"}}


@pytest.mark.parametrize(
    ("recording", "field"),
    [
        ({"url": "s3://samples/x"}, "/refusalProxy/recording/secret"),
        ({"url": "https://samples.example/x", "secret": "s"}, "/refusalProxy/recording/url"),
        ({"url": "s3://samples/x", "secret": "s", "rate": 0}, "/refusalProxy/recording/rate"),
        ({"url": "s3://samples/x", "secret": "s", "rate": 1.5}, "/refusalProxy/recording/rate"),
        ({"url": "s3://samples/x", "secret": "Bad_Name"}, "/refusalProxy/recording/secret"),
    ],
)
def test_schema_rejects_wrong_recording_values_naming_the_field(recording: Object, field: str) -> None:
    assert f"at '{field}'" in render_error({"refusalProxy": {"enabled": True, "recording": recording}})
