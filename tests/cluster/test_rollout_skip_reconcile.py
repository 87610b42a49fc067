"""The skip-reconcile annotation leaves a rollout alone until it is removed."""

from __future__ import annotations

from kubernetes import client

from modelgate.api import Phase
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.scenario import serving


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
