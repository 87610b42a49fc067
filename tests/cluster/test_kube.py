"""modelgate.kube against a real API server: Deployment availability as the bed's controllers report
it, Secret keys, the ModelRollout status subresource and annotations, and Events."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from kubernetes import client

from modelgate import API_GROUP, API_VERSION
from modelgate import PLURAL as MODELROLLOUTS
from modelgate.api import Condition, ConditionStatus, ModelRolloutStatus, Phase, RollbackReason
from modelgate.api.addresses import ALLOWED_ADDRESSES_ANNOTATION
from modelgate.commands import SKIP_RECONCILE_ANNOTATION
from modelgate.kube import DeploymentAvailability, Kube, NotFound
from testbed.manifests import model_deployment
from testbed.waiting import wait_for
from tests.support.kube import create

STARTED = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def kube(api_client: client.ApiClient) -> Kube:
    return Kube(api_client)


def model_rollout(namespace: str, name: str = "chat") -> dict[str, Any]:
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "ModelRollout",
        # skip-reconcile: these tests write status themselves; the session's operator must not.
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {"team": "llm", SKIP_RECONCILE_ANNOTATION: "true"},
        },
        "spec": {
            "incumbent": {"deployment": "chat-v1"},
            "candidate": {"deployment": "chat-v2"},
            "trafficRouting": {
                "gatewayAPI": {
                    "httpRoute": "chat",
                    "incumbentBackend": "chat-v1",
                    "candidateBackend": "chat-v2",
                }
            },
            "steps": [{"setWeight": 10}, {"pause": {"duration": "2m"}}, {"pause": {}}, {"setWeight": 100}],
        },
    }


@pytest.fixture
def rollout(api_client: client.ApiClient, namespace: str) -> dict[str, Any]:
    created = client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, MODELROLLOUTS, model_rollout(namespace)
    )
    assert isinstance(created, dict)
    return created


# -- deployment_availability ---------------------------------------------------------------------
def deployment_status(api_client: client.ApiClient, namespace: str, name: str) -> Any:
    return client.AppsV1Api(api_client).read_namespaced_deployment_status(name, namespace).status


def available_condition(api_client: client.ApiClient, namespace: str, name: str) -> str | None:
    """The Available condition's status once the controller has seen the current spec."""
    status = deployment_status(api_client, namespace, name)
    if not status.observed_generation:
        return None
    return next((c.status for c in status.conditions or [] if c.type == "Available"), None)


def test_missing_deployment(kube: Kube, namespace: str) -> None:
    assert kube.deployment_availability(namespace, "chat-v2") == DeploymentAvailability(
        exists=False, available=False, message=f"Deployment {namespace}/chat-v2 not found"
    )


def test_deployment_becomes_available_through_the_controllers(
    api_client: client.ApiClient, kube: Kube, namespace: str
) -> None:
    create(api_client, model_deployment("chat-v2", namespace, replicas=2))

    availability = wait_for(
        lambda: (found := kube.deployment_availability(namespace, "chat-v2")).available and found,
        timeout=60,
        what="chat-v2 to become available",
    )

    assert availability == DeploymentAvailability(
        exists=True, available=True, message=f"Deployment {namespace}/chat-v2: 2 of 2 replicas available"
    )


def test_deployment_whose_pods_cannot_be_scheduled_is_not_available(
    api_client: client.ApiClient, kube: Kube, namespace: str
) -> None:
    deployment = model_deployment("chat-v2", namespace, replicas=2)
    deployment["spec"]["template"]["spec"]["nodeSelector"] = {"modelgate.io/no-such-node": "true"}
    create(api_client, deployment)
    wait_for(
        lambda: available_condition(api_client, namespace, "chat-v2") == "False",
        timeout=60,
        what="the controller to report chat-v2 not Available",
    )

    availability = kube.deployment_availability(namespace, "chat-v2")

    assert (availability.exists, availability.available) == (True, False)
    assert availability.message.startswith(
        f"Deployment {namespace}/chat-v2: it is not Available (MinimumReplicasUnavailable: "
    )
    assert availability.message.endswith("; 0 of 2 replicas available")


def test_deployment_scaled_to_zero_is_not_available(
    api_client: client.ApiClient, kube: Kube, namespace: str
) -> None:
    create(api_client, model_deployment("chat-v2", namespace, replicas=0))
    # With no replicas the minimum availability is trivially met: Available is True.
    wait_for(
        lambda: available_condition(api_client, namespace, "chat-v2") == "True",
        timeout=60,
        what="the controller to report chat-v2 Available",
    )

    assert kube.deployment_availability(namespace, "chat-v2") == DeploymentAvailability(
        exists=True,
        available=False,
        message=f"Deployment {namespace}/chat-v2: it is scaled to zero replicas; 0 of 0 replicas available",
    )


# -- read_secret_key -----------------------------------------------------------------------------
@pytest.fixture
def prom_token(api_client: client.ApiClient, namespace: str) -> None:
    client.CoreV1Api(api_client).create_namespaced_secret(
        namespace,
        client.V1Secret(
            metadata=client.V1ObjectMeta(
                name="prom-token", annotations={ALLOWED_ADDRESSES_ANNOTATION: "https://prometheus:9090"}
            ),
            string_data={"token": "s3cr\u00e9t", "user": "m"},
        ),
    )


@pytest.mark.usefixtures("prom_token")
def test_read_secret_key(kube: Kube, namespace: str) -> None:
    read = kube.read_secret_key(namespace, "prom-token", "token")
    assert read.text == "s3cr\u00e9t"
    assert read.annotations[ALLOWED_ADDRESSES_ANNOTATION] == "https://prometheus:9090"


@pytest.mark.usefixtures("prom_token")
def test_read_secret_key_missing_key(kube: Kube, namespace: str) -> None:
    with pytest.raises(NotFound) as missing:
        kube.read_secret_key(namespace, "prom-token", "password")
    assert (
        missing.value.message == f"Secret {namespace}/prom-token has no key 'password' (it has: token, user)"
    )


def test_read_secret_key_missing_secret(kube: Kube, namespace: str) -> None:
    with pytest.raises(NotFound) as missing:
        kube.read_secret_key(namespace, "prom-token", "token")
    assert (missing.value.status, missing.value.message) == (404, f"Secret {namespace}/prom-token not found")


# -- ModelRollout status and annotations -----------------------------------------------------------
def test_patch_status_writes_the_status_subresource_only(
    kube: Kube, namespace: str, rollout: dict[str, Any]
) -> None:
    status = ModelRolloutStatus(
        phase=Phase.PROGRESSING,
        message="step 1: pausing for 2m",
        observed_generation=1,
        rollout_candidate="chat-v2",
        current_step_index=1,
        current_weight=10,
        step_started_at=STARTED,
        conditions=(
            Condition(
                type="RouteReady",
                status=ConditionStatus.TRUE,
                reason="RouteFound",
                message="the route and both backends exist",
                last_transition_time=STARTED,
                observed_generation=1,
            ),
        ),
    )

    stored = kube.patch_status(namespace, "chat", status.to_patch())

    assert ModelRolloutStatus.model_validate(stored["status"]) == status
    assert stored["spec"] == rollout["spec"]
    assert stored["metadata"]["generation"] == rollout["metadata"]["generation"]
    assert (
        kube.get_custom(API_GROUP, API_VERSION, namespace, MODELROLLOUTS, "chat")["status"]
        == stored["status"]
    )


def test_patch_status_clears_what_the_new_status_leaves_unset(
    kube: Kube, namespace: str, rollout: dict[str, Any]
) -> None:
    rolled_back = ModelRolloutStatus(
        phase=Phase.ROLLED_BACK,
        rollback_reason=RollbackReason(time=STARTED, message="error-rate 0.2 > 0.01", metric="error-rate"),
    )
    assert "rollbackReason" in kube.patch_status(namespace, "chat", rolled_back.to_patch())["status"]

    retried = ModelRolloutStatus(phase=Phase.PENDING)
    stored = kube.patch_status(namespace, "chat", retried.to_patch())["status"]

    assert "rollbackReason" not in stored
    assert ModelRolloutStatus.model_validate(stored) == retried


def test_patch_status_of_missing_rollout(kube: Kube, namespace: str) -> None:
    with pytest.raises(NotFound):
        kube.patch_status(namespace, "nope", {"phase": "Pending"})


def test_patch_annotations_sets_and_removes(kube: Kube, namespace: str, rollout: dict[str, Any]) -> None:
    kube.patch_annotations(
        namespace, "chat", {"modelgate.io/command": "promote", "modelgate.io/command-id": "1"}
    )

    stored = kube.patch_annotations(namespace, "chat", {"modelgate.io/command-id": None})

    assert stored["metadata"]["annotations"] == {
        "team": "llm",
        SKIP_RECONCILE_ANNOTATION: "true",
        "modelgate.io/command": "promote",
    }


# -- create_event --------------------------------------------------------------------------------
def test_create_event_is_listed_for_the_rollout(
    api_client: client.ApiClient, kube: Kube, namespace: str, rollout: dict[str, Any]
) -> None:
    kube.create_event(rollout, "Warning", "RolledBack", "error-rate 0.2 > 0.01", action="Rollback")

    # The session's operator may record Events about this rollout too: pick ours by its note.
    events = kube.list_custom("events.k8s.io", "v1", namespace, "events")
    [event] = [e for e in events if e.get("note") == "error-rate 0.2 > 0.01"]
    assert {key: event[key] for key in ("type", "reason", "note", "action", "reportingController")} == {
        "type": "Warning",
        "reason": "RolledBack",
        "note": "error-rate 0.2 > 0.01",
        "action": "Rollback",
        "reportingController": "modelgate.io/operator",
    }
    assert event["reportingInstance"].startswith("modelgate-")
    assert event["regarding"] == {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "ModelRollout",
        "namespace": namespace,
        "name": "chat",
        "uid": rollout["metadata"]["uid"],
    }
    # What `kubectl describe mro chat` looks up: core/v1 Events by involved object.
    [legacy] = [
        e
        for e in client.CoreV1Api(api_client)
        .list_namespaced_event(
            namespace, field_selector="involvedObject.name=chat,involvedObject.kind=ModelRollout"
        )
        .items
        if e.message == "error-rate 0.2 > 0.01"
    ]
    assert (legacy.reason, legacy.message) == ("RolledBack", "error-rate 0.2 > 0.01")


def test_create_event_truncates_an_over_long_message(
    kube: Kube, namespace: str, rollout: dict[str, Any]
) -> None:
    kube.create_event(rollout, "Normal", "Progressing", "\u00e9" * 2000)

    # The session's operator may record Events about this rollout too: pick ours by its note.
    events = kube.list_custom("events.k8s.io", "v1", namespace, "events")
    [event] = [e for e in events if e.get("reason") == "Progressing"]
    assert len(event["note"].encode("utf-8")) <= 1024
    assert event["note"].endswith("...")
