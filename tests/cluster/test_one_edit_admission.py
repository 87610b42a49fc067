"""The chart's admission policy for one-edit rollouts (oneEdit.requireDeploymentRights), on the bed's
real API server: a tenant who may create ModelRollouts but not Deployments cannot have the operator
run an image, args or env of their choosing (spec.candidatePatch), on create or by an update of the
patch or the incumbent; naming a candidate stays theirs; with Deployment rights, they may."""

from __future__ import annotations

from pathlib import Path

from kubernetes import client

from modelgate import API_GROUP, PLURAL
from testbed.localcluster import LocalCluster
from testbed.waiting import wait_for
from tests.cluster.test_one_edit_rollouts import MANIFEST, bed_manifests
from tests.support.helm import installed_chart
from tests.support.kube import create
from tests.support.tenants import grant, tenant

WRITERS = {"apiGroups": [API_GROUP], "resources": [PLURAL], "verbs": ["create", "get", "patch"]}
DEPLOYMENTS = {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["create", "patch"]}


def test_a_tenant_without_deployment_rights_cannot_get_a_candidate_patch(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    someone = tenant(local_bed, api_client, namespace, tmp_path)
    grant(api_client, namespace, "rollouts", [WRITERS])
    patched = bed_manifests(MANIFEST, namespace, local_bed.prometheus_url)[-1]
    named = {**patched, "spec": {**patched["spec"]}}
    named["spec"].pop("candidatePatch")
    named["spec"]["candidate"] = {"deployment": "chat-v2"}
    named["spec"]["trafficRouting"] = {
        "gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "chat-v1", "candidateBackend": "chat-v2"}
    }

    assert someone.refusal(patched) is None  # without the policy, any patch of their choosing
    values = {"rbac.scope": "namespaces", "watchNamespaces": [namespace], "oneEdit.enabled": True}
    with installed_chart(local_bed.kubeconfig, namespace, values):
        refused = wait_for(
            lambda: someone.refusal(patched), timeout=30, what="the admission policy to refuse"
        )
        assert refused.status == 403
        assert "spec.candidatePatch" in str(refused.body) and someone.username in str(refused.body)
        assert someone.refusal(named) is None
        # An existing rollout (made by someone with the rights) whose patch the tenant changes.
        create(api_client, named | {"metadata": {**named["metadata"], "name": "by-admin"}})
        create(api_client, patched | {"metadata": {**patched["metadata"], "name": "patched-by-admin"}})
        edit = {"candidatePatch": {"image": "registry.example/theirs:1"}}
        changed = someone.update_refusal(patched | {"metadata": {"name": "patched-by-admin"}}, edit)
        assert changed is not None and changed.status == 403, changed

        grant(api_client, namespace, "deployments", [DEPLOYMENTS])
        wait_for(lambda: someone.refusal(patched) is None, timeout=30, what="a tenant with Deployment rights")
