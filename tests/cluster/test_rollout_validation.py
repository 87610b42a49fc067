"""Invalid manifests are refused by the API server (schema and CEL rules) with a message that names
the field; a rollout whose HTTPRoute is missing ends Failed and changes no traffic."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from modelgate.api import Phase
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, Manifest, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.kube import create
from tests.support.scenario import serving

Breaker = Callable[[dict[str, Any]], None]


def valid(namespace: str) -> Manifest:
    return model_rollout(
        "bad",
        namespace,
        steps=[{"setWeight": 10}, {"pause": {"duration": "1m"}}],
        prometheus="http://127.0.0.1:9090",
        metrics=copy.deepcopy(SEED_METRICS),
    )


def _set(path: list[str | int], value: Any) -> Breaker:
    def apply(spec: dict[str, Any]) -> None:
        target: Any = spec
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return apply


INVALID: dict[str, tuple[Breaker, str, str]] = {
    "weight 150": (_set(["steps", 0, "setWeight"], 150), "spec.steps[0].setWeight", "100"),
    "no steps": (_set(["steps"], []), "spec.steps", "at least 1"),
    "a step with two kinds": (
        _set(["steps", 0], {"setWeight": 10, "pause": {}}),
        "spec.steps[0]",
        "exactly one of setWeight or pause",
    ),
    "unknown preset": (
        _set(["analysis", "metrics", 0, "preset"], "accuracy"),
        "spec.analysis.metrics[0].preset",
        "errorRate",
    ),
    "metric with neither max nor min": (
        _set(["analysis", "metrics", 0], {"name": "error-rate", "preset": "errorRate"}),
        "spec.analysis.metrics[0]",
        "max",
    ),
    "candidate equal to incumbent": (
        _set(["candidate", "deployment"], "chat-v1"),
        "spec.candidate.deployment",
        "differ",
    ),
    "malformed duration": (
        _set(["steps", 1, "pause", "duration"], "5 minutes"),
        "spec.steps[1].pause.duration",
        "duration",
    ),
}


@pytest.mark.parametrize("case", INVALID, ids=list(INVALID))
def test_api_server_refuses_invalid_rollouts_naming_the_field(
    api_client: client.ApiClient, namespace: str, case: str
) -> None:
    breaker, field, hint = INVALID[case]
    manifest = valid(namespace)
    breaker(manifest["spec"])
    with pytest.raises(ApiException) as refused:
        create(api_client, manifest)
    assert refused.value.status == 422
    assert field in refused.value.body, refused.value.body
    assert hint in refused.value.body, refused.value.body


def test_the_valid_baseline_is_accepted(api_client: client.ApiClient, namespace: str) -> None:
    create(api_client, valid(namespace))


def test_missing_route_ends_failed_and_changes_no_traffic(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 50}],
        prometheus=local_bed.prometheus_url,
        metrics=SEED_METRICS,
    )
    manifest["spec"]["trafficRouting"]["gatewayAPI"]["httpRoute"] = "no-such-route"
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)
        failed = scenario.wait_for_status("Failed", lambda s: s.phase is not None)
        assert failed.phase is Phase.FAILED
        assert failed.message == f"HTTPRoute {namespace}/no-such-route not found"
        route_ready = next(c for c in failed.conditions if c.type == "RouteReady")
        assert (route_ready.status, route_ready.reason) == ("False", "RouteNotFound")
        events = client.CoreV1Api(api_client).list_namespaced_event(namespace).items
        assert any(e.reason == "RouteNotFound" and e.type == "Warning" for e in events)
        assert scenario.recorder.candidate_weights() == [0]


def test_skip_reconcile_leaves_a_rollout_alone_until_removed(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 50}],
        prometheus=local_bed.prometheus_url,
        metrics=SEED_METRICS,
    )
    manifest["metadata"]["annotations"] = {"modelgate.io/skip-reconcile": "true"}
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)

        def skipped() -> bool:
            return any(
                line["event"] == "skip-reconcile is set; leaving the rollout alone"
                and line.get("namespace") == namespace
                for line in operator.log_records()
            )

        wait_for(skipped, timeout=30, what="the operator to skip the rollout")
        assert scenario.rollout().get("status") is None
        assert scenario.recorder.candidate_weights() == [0]
        unskip = {"metadata": {"annotations": {"modelgate.io/skip-reconcile": None}}}
        client.CustomObjectsApi(api_client).patch_namespaced_custom_object(
            "modelgate.io", "v1alpha1", namespace, "modelrollouts", "chat", unskip
        )
        scenario.wait_for_status("success once reconciled", lambda s: s.phase is Phase.SUCCEEDED)
