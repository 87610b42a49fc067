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
from testbed.manifests import SEED_METRICS, model_rollout
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


def check(test_set: dict[str, Any], **evaluator: Any) -> dict[str, Any]:
    return {"name": "quality", "evaluator": {"testSet": test_set, **evaluator}}


def test_a_tenant_who_cannot_read_a_storage_secret_cannot_redirect_what_is_read_with_it(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    someone = tenant(local_bed, api_client, namespace, tmp_path)
    grant(api_client, namespace, "writers", [WRITERS])
    rollout = gated_rollout(namespace, [check(STORED_SET)], [{"setWeight": 50}])
    evaluation = model_evaluation(namespace, model={"url": "https://models.team-b.example/v1"})
    evaluation["spec"]["checks"] = [check(STORED_SET)]
    unstored = gated_rollout(namespace, [check(CONFIG_MAP_SET)], [{"setWeight": 50}])
    unstored["metadata"]["name"] = "unstored"
    results_only = gated_rollout(
        namespace,
        [check(CONFIG_MAP_SET)],
        [{"setWeight": 50}],
        results={"s3": {"url": "s3://results", "secret": STORE}},
    )
    results_only["metadata"]["name"] = "results-only"
    for manifest in (rollout, evaluation, unstored, results_only):
        create(api_client, manifest)
    elsewhere = {"deployment": "tenant-model"}
    routed_elsewhere = {
        "gatewayAPI": {**rollout["spec"]["trafficRouting"]["gatewayAPI"], "candidateBackend": "tenant-model"}
    }

    assert someone.update_refusal(rollout, {"candidate": elsewhere}) is None  # the bug, without the policy
    values = {"rbac.scope": "namespaces", "watchNamespaces": [namespace]}
    with installed_chart(local_bed.kubeconfig, namespace, values):
        refused = wait_for(
            lambda: someone.update_refusal(rollout, {"candidate": elsewhere}),
            timeout=30,
            what="the admission policy to refuse",
        )
        refused_naming(refused, "spec.candidate", someone)
        assert STORE in str(refused.body)
        refused_naming(someone.update_refusal(rollout, {"incumbent": elsewhere}), "spec.incumbent", someone)
        refused_naming(
            someone.update_refusal(rollout, {"trafficRouting": routed_elsewhere}),
            "spec.trafficRouting",
            someone,
        )
        redirected_check = {"checks": [check(STORED_SET, candidate={"url": ELSEWHERE})]}
        refused_naming(
            someone.update_refusal(rollout, {"gate": redirected_check}),
            "spec.gate.checks[quality].evaluator",
            someone,
        )
        refused_naming(
            someone.update_refusal(evaluation, {"model": {"url": ELSEWHERE}}), "spec.model.url", someone
        )
        judged = [check(STORED_SET, judge={"url": ELSEWHERE, "model": "judge"})]
        refused_naming(
            someone.update_refusal(evaluation, {"checks": judged}), "spec.checks[quality].evaluator", someone
        )

        # Nothing read with the Secret goes anywhere new: admitted.
        assert someone.update_refusal(rollout, {"steps": [{"setWeight": 20}]}) is None
        assert someone.update_refusal(evaluation, {"suspend": True}) is None
        assert someone.update_refusal(unstored, {"candidate": elsewhere}) is None
        # A results store is written, not read: nothing it holds goes anywhere new.
        assert someone.update_refusal(results_only, {"candidate": elsewhere}) is None

        grant(api_client, namespace, "store", [secret_readers([STORE])])
        wait_for(
            lambda: someone.update_refusal(rollout, {"candidate": elsewhere}) is None,
            timeout=30,
            what="a tenant who may read the Secret to be admitted",
        )
        assert someone.update_refusal(evaluation, {"model": {"url": ELSEWHERE}}) is None
        assert someone.update_refusal(rollout, {"gate": redirected_check}) is None


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
    values = {"rbac.scope": "namespaces", "watchNamespaces": [namespace]}
    with installed_chart(local_bed.kubeconfig, namespace, values):
        refused = wait_for(
            lambda: someone.update_refusal(rollout, moved_token), timeout=30, what="the policy to refuse"
        )
        refused_naming(refused, "spec.analysis.prometheus.address", someone)
        assert TOKEN in str(refused.body)
        moved = someone.update_refusal(rollout, moved_receiver)
        refused_naming(moved, "spec.notifications.receivers[team].urlSecretRef", someone)
        assert OTHER in str(moved.body)

        # The token and the notifications still go where they went: admitted.
        assert someone.update_refusal(rollout, {"analysis": {"prometheus": {"timeout": "3s"}}}) is None
        assert someone.update_refusal(rollout, {"notifications": {"on": ["Failed"]}}) is None

        grant(api_client, namespace, "readers", [secret_readers([TOKEN, OTHER])])
        wait_for(
            lambda: someone.update_refusal(rollout, moved_token) is None,
            timeout=30,
            what="a tenant who may read the token's Secret to be admitted",
        )
        assert someone.update_refusal(rollout, moved_receiver) is None
