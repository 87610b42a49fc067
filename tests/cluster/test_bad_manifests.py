"""Every malformed ModelRollout of tests/support/bad_rollouts.py against a real API server: refused
with HTTP 422 naming the field in the response's causes, in sentences (tests/support/refusals.py),
or, where only the operator can see the problem, Failed with the field in the message and the
route's weights untouched."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from modelgate.api import Phase
from modelgate.commands import SKIP_RECONCILE_ANNOTATION
from testbed.manifests import http_route
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.bad_rollouts import BAD_ROLLOUTS, UNKNOWN_FIELDS, valid_rollout
from tests.support.kube import create, create_model_routes, rollout_status, route_weights
from tests.support.refusals import NOT_CHECKED, STOPS_CEL, is_readable

BY_API_SERVER = {name: row for name, row in BAD_ROLLOUTS.items() if not row.by_operator}
BY_OPERATOR = {name: row for name, row in BAD_ROLLOUTS.items() if row.by_operator}
UNTOUCHED = {"chat-v1": 100, "chat-v2": 0}


def refusal_causes(error: ApiException) -> list[dict[str, str]]:
    body = json.loads(error.body or "{}")
    causes: list[dict[str, str]] = body.get("details", {}).get("causes", [])
    return causes


def refused_fields(error: ApiException) -> list[str]:
    return [cause.get("field", "") for cause in refusal_causes(error)]


def accepted_only(manifest: dict[str, Any]) -> dict[str, Any]:
    """A rollout created to be stored, not run: left alone by the operator, so that it never moves
    the route the operator's rows are checked against."""
    manifest["metadata"]["annotations"] = {SKIP_RECONCILE_ANNOTATION: "true"}
    return manifest


def test_the_valid_rollout_is_accepted(api_client: client.ApiClient, shared_namespace: str) -> None:
    create(api_client, accepted_only(valid_rollout(shared_namespace, name="valid")))


@pytest.mark.parametrize("case", BY_API_SERVER, ids=list(BY_API_SERVER))
def test_the_api_server_refuses_naming_the_field(
    api_client: client.ApiClient, shared_namespace: str, case: str
) -> None:
    manifest = valid_rollout(shared_namespace)
    BY_API_SERVER[case].edit(manifest)
    with pytest.raises(ApiException) as refused:
        create(api_client, manifest)
    assert refused.value.status == 422, refused.value.body
    field, bound = BY_API_SERVER[case].field, BY_API_SERVER[case].bound
    assert field in refused_fields(refused.value), refused.value.body
    # The field's refusal states its limit, rather than that the value could not be evaluated.
    said = [
        cause.get("message", "") for cause in refusal_causes(refused.value) if cause.get("field") == field
    ]
    assert bound is None or any(bound in message for message in said), refused.value.body
    causes = refusal_causes(refused.value)
    # In sentences: no regular expression; metadata's refusals are the API server's own.
    assert all(is_readable(message) for message in said) or not field.startswith("spec"), said
    # Kubernetes' "some validation rules were not checked" only where CEL could not run.
    if not {cause.get("reason") for cause in causes} & STOPS_CEL:
        assert not any(NOT_CHECKED in cause.get("message", "") for cause in causes), causes


@pytest.mark.parametrize("case", UNKNOWN_FIELDS, ids=list(UNKNOWN_FIELDS))
def test_unknown_fields_are_refused_under_strict_validation_and_never_kept(
    api_client: client.ApiClient, shared_namespace: str, case: str
) -> None:
    manifest = accepted_only(
        valid_rollout(shared_namespace, name=f"unknown-{list(UNKNOWN_FIELDS).index(case)}")
    )
    UNKNOWN_FIELDS[case].edit(manifest)
    objects = client.CustomObjectsApi(api_client)
    args = ("modelgate.io", "v1alpha1", shared_namespace, "modelrollouts")
    with pytest.raises(ApiException) as refused:
        objects.create_namespaced_custom_object(*args, manifest, field_validation="Strict")
    # A decoding error: HTTP 400 without causes, the field named in the message.
    assert refused.value.status == 400, refused.value.body
    assert f'unknown field \\"{UNKNOWN_FIELDS[case].field}\\"' in (refused.value.body or ""), (
        refused.value.body
    )

    stored = objects.create_namespaced_custom_object(*args, manifest, field_validation="Ignore")
    *parents, unknown = re.findall(r"[^.\[\]]+", UNKNOWN_FIELDS[case].field)
    node = stored
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    assert unknown not in node  # pruned, not kept


@pytest.fixture(scope="module")
def operator_rows(
    api_client: client.ApiClient, shared_namespace: str, operator: OperatorProcess
) -> dict[str, str]:
    """Every operator-only row created at once, each as its own rollout over the same route; the
    rollout's name by row."""
    create_model_routes(api_client, shared_namespace, ["chat"])
    pool_route = http_route("chat-pool", shared_namespace, UNTOUCHED)
    pool_route["spec"]["rules"][0]["backendRefs"][1] |= {
        "group": "inference.networking.k8s.io",
        "kind": "InferencePool",
    }
    create(api_client, pool_route)
    names = {}
    for index, (case, row) in enumerate(BY_OPERATOR.items()):
        manifest = valid_rollout(shared_namespace, name=f"operator-{index}")
        row.edit(manifest)
        create(api_client, manifest)
        names[case] = manifest["metadata"]["name"]
    return names


def failed_ticks(operator: OperatorProcess, namespace: str) -> list[dict[str, Any]]:
    """Ticks that raised instead of reporting (the loop logs and retries them)."""
    return [
        record
        for record in operator.log_records()
        if record["event"].startswith("tick failed") and record.get("namespace") == namespace
    ]


@pytest.mark.parametrize("case", BY_OPERATOR, ids=list(BY_OPERATOR))
def test_the_operator_fails_the_rollout_naming_the_field_and_moves_no_traffic(
    api_client: client.ApiClient,
    shared_namespace: str,
    operator: OperatorProcess,
    operator_rows: dict[str, str],
    case: str,
) -> None:
    name = operator_rows[case]

    def failed() -> bool:
        return rollout_status(api_client, shared_namespace, name).phase is Phase.FAILED

    wait_for(failed, timeout=60, what=f"rollout {name} to fail")
    status = rollout_status(api_client, shared_namespace, name)
    assert status.message is not None and BY_OPERATOR[case].field in status.message, status.message
    assert status.current_weight == 0
    assert route_weights(api_client, shared_namespace, "chat") == UNTOUCHED
    assert failed_ticks(operator, shared_namespace) == []


def test_a_status_the_operator_cannot_read_fails_the_rollout_naming_the_field(
    api_client: client.ApiClient,
    shared_namespace: str,
    operator: OperatorProcess,
    operator_rows: dict[str, str],
) -> None:
    """The API server's date-time takes the year 9999, to which no pause can be added."""
    create(api_client, http_route("by-hand", shared_namespace, UNTOUCHED))
    manifest = valid_rollout(shared_namespace, name="status-by-hand")
    manifest["spec"]["trafficRouting"]["gatewayAPI"]["httpRoute"] = "by-hand"
    manifest["spec"]["steps"][1]["pause"]["duration"] = "2h"
    manifest["metadata"]["annotations"] = {SKIP_RECONCILE_ANNOTATION: "true"}
    create(api_client, manifest)
    objects = client.CustomObjectsApi(api_client)
    args = ("modelgate.io", "v1alpha1", shared_namespace, "modelrollouts", "status-by-hand")
    by_hand = {
        "phase": "Progressing",
        "rolloutCandidate": "chat-v2",
        "currentStepIndex": 1,  # the pause, which would end past datetime's end
        "stepStartedAt": "9999-12-31T23:00:00Z",
    }
    objects.patch_namespaced_custom_object_status(*args, {"status": by_hand})
    objects.patch_namespaced_custom_object(
        *args, {"metadata": {"annotations": {SKIP_RECONCILE_ANNOTATION: None}}}
    )

    def failed() -> bool:  # read raw: the test's own model cannot read the status either, until then
        return bool(objects.get_namespaced_custom_object(*args)["status"].get("phase") == "Failed")

    wait_for(failed, timeout=60, what="the rollout with a hand-written status to fail")
    status = rollout_status(api_client, shared_namespace, "status-by-hand")
    assert status.message is not None and "status.stepStartedAt" in status.message, status.message
    assert route_weights(api_client, shared_namespace, "by-hand") == UNTOUCHED
    assert failed_ticks(operator, shared_namespace) == []
