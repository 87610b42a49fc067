"""The candidate gets no traffic before its Deployment is Available."""

from __future__ import annotations

from kubernetes import client

from modelgate.api import Phase
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.scenario import serving, settled


def test_rollout_waits_for_an_available_candidate(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    apps = client.AppsV1Api(api_client)
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 20}],
        prometheus=local_bed.prometheus_url,
        metrics=SEED_METRICS,
        interval="1s",
    )
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        # A new template of the candidate whose Pods cannot be scheduled (no node has this label):
        # its old Pods keep the Deployment's `Available` condition True, but it is not ready.
        unschedulable = {"spec": {"template": {"spec": {"nodeSelector": {"modelgate.io/gpu": "none"}}}}}
        apps.patch_namespaced_deployment("chat-v2", namespace, unschedulable)
        wait_for(
            lambda: apps.read_namespaced_deployment("chat-v2", namespace).status.updated_replicas == 1,
            timeout=30,
            what="chat-v2's new template to have an unschedulable replica",
        )
        scenario.apply(manifest)
        pending = scenario.wait_for_status("Pending", lambda s: s.phase is Phase.PENDING and bool(s.message))
        assert "waiting for the candidate" in (pending.message or "")
        assert pending.current_weight == 0
        available = next(c for c in pending.conditions if c.type == "CandidateAvailable")
        assert available.status == "False"

        apps.patch_namespaced_deployment(
            "chat-v2", namespace, {"spec": {"template": {"spec": {"nodeSelector": None}}}}
        )
        done = scenario.wait_for_status("success", settled(Phase.SUCCEEDED))
        assert done.current_weight == 100
        assert scenario.recorder.weights_until(100) == [0, 20, 100]
