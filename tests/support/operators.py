"""Operator processes for tests that run their own: started and stopped around a block, and the
session's operator (admin, every namespace, no selector) out of the way meanwhile."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from kubernetes import client

from testbed.operator_process import OperatorProcess


@contextmanager
def running(*operators: OperatorProcess) -> Iterator[None]:
    """Starts them in order and stops every one started, whatever happens."""
    with ExitStack() as stack:
        for operator in operators:
            stack.callback(operator.stop)
            operator.start()  # inside: a start that never got healthy is stopped too
        yield


@contextmanager
def admin_operator_stopped(operator: OperatorProcess) -> Iterator[None]:
    """The session's operator runs as admin in every namespace; it would act on the same rollouts
    and hide what a test's own operators do or fail to do, so it is stopped meanwhile (conftest lets
    tests restart it)."""
    operator.stop()
    try:
        yield
    finally:
        operator.start()


def operator_events(api_client: client.ApiClient, namespace: str) -> dict[str, list[dict[str, Any]]]:
    """The operator's events.k8s.io Events in `namespace`, by the name of the object they are about."""
    events = client.CustomObjectsApi(api_client).list_namespaced_custom_object(
        "events.k8s.io", "v1", namespace, "events"
    )["items"]
    by_object: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        if event.get("reportingController") == "modelgate.io/operator":
            by_object.setdefault(event["regarding"]["name"], []).append(event)
    return by_object


def ticked_rollouts(operator: OperatorProcess) -> set[tuple[str, str]]:
    """(namespace, name) of every rollout the operator's logs name: each tick logs the one it works on."""
    return {
        (record["namespace"], record["rollout"])
        for record in operator.log_records()
        if "rollout" in record and "namespace" in record
    }
