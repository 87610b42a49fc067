"""The operator pod's values that other charts have and users reach for: Deployment annotations,
extra volumes and mounts, probe overrides, the log level (down to the operator's own option parser)
and extra objects; each refused, naming the value, where the pod would not be what was asked."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from modelgate.cli import run
from modelgate.cli.main import build_parser
from tests.unit.test_chart import NAMESPACE, Object, container, render, render_error, the

SCHEMA_REFUSAL = "values don't meet the specifications of the schema"
CA_VOLUME = {"name": "prometheus-ca", "configMap": {"name": "prometheus-ca"}}
CA_MOUNT = {"name": "prometheus-ca", "mountPath": "/etc/prometheus-ca", "readOnly": True}


def pod_spec(objects: list[Object]) -> Object:
    spec: Object = the(objects, "Deployment")["spec"]["template"]["spec"]
    return spec


def test_deployment_annotations_go_on_the_deployment_not_its_pods() -> None:
    assert "annotations" not in the(render(), "Deployment")["metadata"]
    annotations = {"secret.reloader.stakater.com/reload": "prom-token"}
    deployment = the(render({"deploymentAnnotations": annotations}), "Deployment")
    assert deployment["metadata"]["annotations"] == annotations
    assert "annotations" not in deployment["spec"]["template"]["metadata"]


def test_extra_volumes_and_mounts_join_the_charts_own() -> None:
    default = render()
    objects = render({"extraVolumes": [CA_VOLUME], "extraVolumeMounts": [CA_MOUNT]})
    assert pod_spec(objects)["volumes"] == [*pod_spec(default)["volumes"], CA_VOLUME]
    assert container(objects)["volumeMounts"] == [*container(default)["volumeMounts"], CA_MOUNT]


@pytest.mark.parametrize(
    ("values", "named"),
    [
        ({"extraVolumeMounts": [CA_MOUNT]}, "extraVolumeMounts[0]"),
        ({"extraVolumes": [{**CA_VOLUME, "name": "tmp"}]}, "extraVolumes[0]"),
        ({"extraVolumes": [CA_VOLUME, CA_VOLUME]}, "extraVolumes[1]"),
    ],
)
def test_volumes_that_do_not_add_up_are_refused_naming_the_entry(values: Object, named: str) -> None:
    error = render_error(values)
    assert SCHEMA_REFUSAL not in error
    assert f"{named} " in error


def probes(values: Object) -> tuple[Any, Any]:
    operator = container(render(values))
    return operator.get("livenessProbe"), operator.get("readinessProbe")


def test_a_probe_field_is_merged_into_the_charts_probe() -> None:
    liveness, readiness = probes({"livenessProbe": {"periodSeconds": 60, "failureThreshold": 5}})
    default_liveness, default_readiness = probes({})
    assert liveness == default_liveness | {"periodSeconds": 60, "failureThreshold": 5}
    assert readiness == default_readiness


def test_a_probe_handler_replaces_the_charts_when_its_http_get_is_nulled() -> None:
    tcp = {"port": "health"}
    liveness, _ = probes({"livenessProbe": {"httpGet": None, "tcpSocket": tcp}})
    assert liveness["tcpSocket"] == tcp and "httpGet" not in liveness
    # Null for the whole probe: none at all.
    assert "readinessProbe" not in container(render({"readinessProbe": None}))


@pytest.mark.parametrize(
    ("probe", "named"),
    [
        ({"exec": {"command": ["true"]}}, "livenessProbe has 2 handlers"),
        ({"httpGet": None}, "livenessProbe has no handler"),
    ],
)
def test_a_probe_without_exactly_one_handler_is_refused(probe: Object, named: str) -> None:
    error = render_error({"livenessProbe": probe})
    assert SCHEMA_REFUSAL not in error and named in error


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"livenessProbe": {"periodSeconds": 0}}, "/livenessProbe/periodSeconds"),
        ({"readinessProbe": {"timeoutSecond": 5}}, "/readinessProbe"),
        ({"extraVolumeMounts": [{"name": "x", "mountPath": "etc/x"}]}, "/extraVolumeMounts/0/mountPath"),
        ({"extraVolumes": [{"configMap": {"name": "x"}}]}, "/extraVolumes/0"),
        ({"deploymentAnnotations": {"replicas": 2}}, "/deploymentAnnotations/replicas"),
        ({"logLevel": "verbose"}, "/logLevel"),
        ({"extraObjects": [{"apiVersion": "v1", "metadata": {"name": "x"}}]}, "/extraObjects/0"),
        ({"extraObjects": [5]}, "/extraObjects/0"),
    ],
)
def test_schema_refuses_a_bad_pod_value_naming_it(values: Object, field: str) -> None:
    error = render_error(values)
    assert SCHEMA_REFUSAL in error and f"at '{field}'" in error


@pytest.mark.parametrize("level", ["debug", "info", "warning", "error"])
def test_the_log_level_reaches_the_operators_own_parser(level: str) -> None:
    command = container(render({"logLevel": level}))
    args = build_parser().parse_args(command["args"])
    assert args.handler is run.run_operator
    assert run.log_level(args) == logging.getLevelName(level.upper())


def test_extra_objects_are_rendered_as_templates() -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "prom-token", "namespace": "{{ .Release.Namespace }}"},
        "stringData": {"token": "t"},
    }
    config = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: '{{ .Release.Name }}-extra'\ndata: {}\n"
    objects = render({"extraObjects": [secret, config]})
    rendered_secret = the(objects, "Secret")
    assert rendered_secret["metadata"] == {"name": "prom-token", "namespace": NAMESPACE}
    assert rendered_secret["stringData"] == {"token": "t"}
    assert the(objects, "ConfigMap")["metadata"]["name"] == "mg-extra"
