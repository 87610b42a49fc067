"""Who may change where a Secret's data goes (issue 35), on the bed's real API server: a tenant who
may update ModelRollouts and ModelEvaluations but not read a storage Secret they name cannot point
the evaluator elsewhere (a side, the route, a check's endpoint, an evaluation's model), so another
team's private test set or recorded requests never reach a URL of the tenant's choosing. The refusal
names the field; an update elsewhere, or by someone who may read the Secret, is admitted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from modelgate import API_GROUP, EVALUATION_PLURAL, PLURAL
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, Manifest, model_rollout
from testbed.waiting import wait_for
from tests.support.evaluations import model_evaluation
from tests.support.gate import gated_rollout
from tests.support.helm import installed_chart
from tests.support.kube import create
from tests.support.tenants import Tenant, grant, secret_readers, tenant

STORE = "team-b-store"
STORED_SET = {"s3": {"url": "s3://sets/qa.jsonl", "secret": STORE}}
CONFIG_MAP_SET = {"configMap": {"name": "qa", "key": "set.jsonl"}}
WRITERS = {"apiGroups": [API_GROUP], "resources": [PLURAL, EVALUATION_PLURAL], "verbs": ["get", "patch"]}
ELSEWHERE = "https://models.example.com/v1"
TEAM_PROMETHEUS = "https://prometheus.team-b.example"
TOKEN = "prom-token"
WEBHOOKS = "team-webhooks"
OTHER = "other-webhooks"


def refused_naming(refusal: ApiException | None, field: str, who: Tenant) -> None:
    assert refusal is not None and refusal.status == 403, refusal
    assert field in str(refusal.body) and who.username in str(refusal.body), refusal.body


def policed(namespace: str) -> dict[str, Any]:
    """The chart's values for a test: the operator and its policies bound to this namespace."""
    return {"rbac.scope": "namespaces", "watchNamespaces": [namespace]}


def named(manifest: Manifest, name: str) -> Manifest:
    manifest["metadata"]["name"] = name
    return manifest


def check(test_set: dict[str, Any], **evaluator: Any) -> dict[str, Any]:
    return {"name": "quality", "evaluator": {"testSet": test_set, **evaluator}}


def once_refused(someone: Tenant, manifest: Manifest, spec: dict[str, Any]) -> ApiException:
    """The refusal of the update, once the freshly installed policy is in force."""
    return wait_for(lambda: someone.update_refusal(manifest, spec), timeout=30, what="the policy to refuse")


def once_admitted(someone: Tenant, manifest: Manifest, spec: dict[str, Any]) -> None:
    """Waits until the update is admitted (a Role just granted takes a moment to count)."""
    wait_for(lambda: someone.update_refusal(manifest, spec) is None, timeout=30, what="the update admitted")


def test_a_tenant_who_cannot_read_a_storage_secret_cannot_move_a_rollouts_sides_route_or_checks(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    someone = tenant(local_bed, api_client, namespace, tmp_path)
    grant(api_client, namespace, "writers", [WRITERS])
    rollout = gated_rollout(namespace, [check(STORED_SET)], [{"setWeight": 50}])
    unstored = named(gated_rollout(namespace, [check(CONFIG_MAP_SET)], [{"setWeight": 50}]), "unstored")
    results = {"s3": {"url": "s3://results", "secret": STORE}}
    results_only = gated_rollout(namespace, [check(CONFIG_MAP_SET)], [{"setWeight": 50}], results=results)
    for manifest in (rollout, unstored, named(results_only, "results-only")):
        create(api_client, manifest)
    elsewhere = {"deployment": "tenant-model"}
    route = rollout["spec"]["trafficRouting"]["gatewayAPI"]
    routed_elsewhere = {"gatewayAPI": {**route, "candidateBackend": "tenant-model"}}
    redirected_check = {"checks": [check(STORED_SET, candidate={"url": ELSEWHERE})]}

    assert someone.update_refusal(rollout, {"candidate": elsewhere}) is None  # the bug, without the policy
    with installed_chart(local_bed.kubeconfig, namespace, policed(namespace)):
        refused = once_refused(someone, rollout, {"candidate": elsewhere})
        refused_naming(refused, "spec.candidate", someone)
        assert STORE in str(refused.body)
        refused_naming(someone.update_refusal(rollout, {"incumbent": elsewhere}), "spec.incumbent", someone)
        rerouted = someone.update_refusal(rollout, {"trafficRouting": routed_elsewhere})
        refused_naming(rerouted, "spec.trafficRouting", someone)
        moved_check = someone.update_refusal(rollout, {"gate": redirected_check})
        refused_naming(moved_check, "spec.gate.checks[quality].evaluator", someone)

        # Nothing read with the Secret goes anywhere new: admitted.
        assert someone.update_refusal(rollout, {"steps": [{"setWeight": 20}]}) is None
        assert someone.update_refusal(unstored, {"candidate": elsewhere}) is None
        # A results store is written, not read: nothing it holds goes anywhere new.
        assert someone.update_refusal(results_only, {"candidate": elsewhere}) is None

        grant(api_client, namespace, "store", [secret_readers([STORE])])
        once_admitted(someone, rollout, {"candidate": elsewhere})
        assert someone.update_refusal(rollout, {"gate": redirected_check}) is None


def test_a_tenant_who_cannot_read_a_storage_secret_cannot_move_an_evaluations_model_or_judge(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    someone = tenant(local_bed, api_client, namespace, tmp_path)
    grant(api_client, namespace, "writers", [WRITERS])
    evaluation = model_evaluation(namespace, model={"url": "https://models.team-b.example/v1"})
    evaluation["spec"]["checks"] = [check(STORED_SET)]
    create(api_client, evaluation)
    moved_model = {"model": {"url": ELSEWHERE}}
    judged = {"checks": [check(STORED_SET, judge={"url": ELSEWHERE, "model": "judge"})]}

    assert someone.update_refusal(evaluation, moved_model) is None  # the bug, without the policy
    with installed_chart(local_bed.kubeconfig, namespace, policed(namespace)):
        refused_naming(once_refused(someone, evaluation, moved_model), "spec.model.url", someone)
        moved_judge = someone.update_refusal(evaluation, judged)
        refused_naming(moved_judge, "spec.checks[quality].evaluator", someone)
        assert someone.update_refusal(evaluation, {"suspend": True}) is None

        grant(api_client, namespace, "store", [secret_readers([STORE])])
        once_admitted(someone, evaluation, moved_model)
        assert someone.update_refusal(evaluation, judged) is None


def test_a_tenant_who_cannot_read_a_token_or_receiver_secret_cannot_redirect_it(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    """A rollout's Prometheus token goes to its address, its notifications to the URL in a receiver's
    Secret: moving either needs the right to read that Secret."""
    someone = tenant(local_bed, api_client, namespace, tmp_path)
    grant(api_client, namespace, "writers", [WRITERS])
    rollout = model_rollout(
        "chat", namespace, steps=[{"setWeight": 50}], prometheus=TEAM_PROMETHEUS, metrics=SEED_METRICS
    )
    rollout["spec"]["analysis"]["prometheus"]["bearerTokenSecretRef"] = {"name": TOKEN, "key": "token"}
    team = {"name": "team", "kind": "slack", "urlSecretRef": {"name": WEBHOOKS, "key": "team"}}
    rollout["spec"]["notifications"] = {"receivers": [team]}
    create(api_client, rollout)
    moved_token = {"analysis": {"prometheus": {"address": ELSEWHERE}}}
    moved_receiver = {"notifications": {"receivers": [{**team, "urlSecretRef": {"name": OTHER, "key": "t"}}]}}

    assert someone.update_refusal(rollout, moved_token) is None  # the bug, without the policy
    with installed_chart(local_bed.kubeconfig, namespace, policed(namespace)):
        refused = once_refused(someone, rollout, moved_token)
        refused_naming(refused, "spec.analysis.prometheus.address", someone)
        assert TOKEN in str(refused.body)
        moved = someone.update_refusal(rollout, moved_receiver)
        refused_naming(moved, "spec.notifications.receivers[team].urlSecretRef", someone)
        assert OTHER in str(moved.body)

        # The token and the notifications still go where they went: admitted.
        assert someone.update_refusal(rollout, {"analysis": {"prometheus": {"timeout": "3s"}}}) is None
        assert someone.update_refusal(rollout, {"notifications": {"on": ["Failed"]}}) is None

        grant(api_client, namespace, "readers", [secret_readers([TOKEN, OTHER])])
        once_admitted(someone, rollout, moved_token)
        assert someone.update_refusal(rollout, moved_receiver) is None
