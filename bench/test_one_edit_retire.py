"""A one-edit rollout that retires its incumbent, on the bed (a whole promotion of
examples/topologies/one-edit.yaml, then the rollout's deletion: about half a minute, so it runs in
`make bench`; `make test` runs the promotion into the incumbent, the rollback and the deletion
mid-step, tests/cluster/test_one_edit_rollouts.py)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import Phase
from testbed.waiting import wait_for
from tests.cluster.test_one_edit_rollouts import (  # noqa: F401 - scenario is a fixture
    FINISHED,
    INCUMBENT,
    OneEdit,
    generated_left,
    route_backends,
    scenario,
)

pytestmark = pytest.mark.bench


def test_retire_incumbent_keeps_the_candidate_past_its_rollout_and_scales_the_incumbent_down(
    scenario: OneEdit,  # noqa: F811 - the fixture imported above
) -> None:
    api_client, namespace = scenario.api_client, scenario.namespace
    scenario.manifest["spec"]["candidatePatch"]["afterPromotion"] = "RetireIncumbent"
    scenario.apply(scenario.manifest)
    name = scenario.serve_candidate()
    final = scenario.wait_for_status("the rollout to finish", lambda s: s.phase in FINISHED, 180)
    assert final.phase is Phase.SUCCEEDED, final.message
    apps = client.AppsV1Api(api_client)

    def retired() -> bool:
        candidate: Any = apps.read_namespaced_deployment(name, namespace)
        service: Any = client.CoreV1Api(api_client).read_namespaced_service(name, namespace)
        incumbent: Any = apps.read_namespaced_deployment(INCUMBENT, namespace)
        released = not (candidate.metadata.owner_references or service.metadata.owner_references)
        return released and incumbent.spec.replicas == 0

    # Released: nothing for the garbage collector to delete with the rollout.
    wait_for(retired, timeout=60, what="the candidate released and the incumbent at 0 replicas")
    assert route_backends(api_client, namespace) == {INCUMBENT: 0, name: 100}
    client.CustomObjectsApi(api_client).delete_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, PLURAL, "chat"
    )
    wait_for(
        lambda: (
            not client.CustomObjectsApi(api_client)
            .list_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL)
            .get("items")
        ),
        timeout=30,
        what="the rollout gone",
    )
    # The released candidate serves on: its Deployment, Service and backendRef outlive the rollout.
    assert generated_left(api_client, namespace) == [f"Deployment {name}", f"Service {name}"]
    assert route_backends(api_client, namespace) == {INCUMBENT: 0, name: 100}
