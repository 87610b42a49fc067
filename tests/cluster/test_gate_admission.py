"""The chart's admission policy for custom-image gate checks (gate.customImages.requireJobRights),
on the bed's real API server: a tenant who may create ModelRollouts but not Jobs cannot ask for a
check that runs a container of their choosing (in a ModelRollout's gate or a ModelEvaluation); the
built-in evaluator stays theirs; with the right to create Jobs themselves, they may."""

from __future__ import annotations

from pathlib import Path

from kubernetes import client

from modelgate import API_GROUP, EVALUATION_PLURAL, PLURAL
from testbed.localcluster import LocalCluster
from testbed.waiting import wait_for
from tests.support.evaluations import model_evaluation
from tests.support.gate import gate_result, gated_rollout, script_check
from tests.support.helm import installed_chart
from tests.support.tenants import grant, secret_readers, tenant

TEST_SET = {"configMap": {"name": "qa", "key": "set.jsonl"}}
EVALUATOR_CHECK = {"name": "quality", "evaluator": {"testSet": TEST_SET}}
JOBS = {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create"]}
WRITERS = {"apiGroups": [API_GROUP], "resources": [PLURAL, EVALUATION_PLURAL], "verbs": ["create", "get"]}


def test_a_tenant_without_job_rights_cannot_get_a_custom_image_check(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    someone = tenant(local_bed, api_client, namespace, tmp_path)
    grant(api_client, namespace, "rollouts", [WRITERS])
    refusal = someone.refusal
    custom = gated_rollout(namespace, [script_check("mine", gate_result())], [{"setWeight": 50}])
    built_in = gated_rollout(namespace, [EVALUATOR_CHECK], [{"setWeight": 50}])
    # The same container asked for by a ModelEvaluation's check.
    evaluation = model_evaluation(namespace, checks=[script_check("mine", gate_result())])

    assert refusal(custom) is None  # without the policy the tenant gets a container of their own
    values = {"rbac.scope": "namespaces", "watchNamespaces": [namespace], "gate.customImages.allowed": True}
    with installed_chart(local_bed.kubeconfig, namespace, values):
        refused = wait_for(lambda: refusal(custom), timeout=30, what="the admission policy to refuse")
        assert refused.status == 403
        assert "spec.gate.checks[].job" in str(refused.body)
        assert someone.username in str(refused.body)
        assert refusal(built_in) is None
        by_evaluation = refusal(evaluation)
        assert by_evaluation is not None and by_evaluation.status == 403, by_evaluation
        assert "spec.checks[].job" in str(by_evaluation.body)

        grant(api_client, namespace, "jobs", [JOBS])
        wait_for(lambda: refusal(custom) is None, timeout=30, what="a tenant with Job rights to be admitted")
        assert refusal(evaluation) is None


def test_a_tenant_cannot_have_the_evaluator_use_a_storage_secret_they_cannot_read(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    """The evaluator Job sends a named Secret's credentials to the endpoint it names: a tenant who
    may create ModelRollouts and ModelEvaluations but not read that Secret must not get to use it."""
    someone = tenant(local_bed, api_client, namespace, tmp_path)
    grant(api_client, namespace, "rollouts", [WRITERS])
    refusal = someone.refusal
    stored = {"s3": {"url": "s3://sets/qa.jsonl", "secret": "team-b-store"}}
    naming = gated_rollout(
        namespace, [{"name": "quality", "evaluator": {"testSet": stored}}], [{"setWeight": 50}]
    )
    results = gated_rollout(
        namespace,
        [EVALUATOR_CHECK],
        [{"setWeight": 50}],
        results={"s3": {"url": "s3://results", "secret": "team-b-store"}},
    )
    recorded = {"recorded": {"s3": {"url": "s3://recordings/chat-v1", "secret": "team-b-store"}}}
    replaying = gated_rollout(
        namespace, [{"name": "replay", "evaluator": {"replay": recorded}}], [{"setWeight": 50}]
    )

    # The same Secret named by a ModelEvaluation's check (its run Jobs are the gate's).
    evaluation = model_evaluation(namespace, checks=[{"name": "quality", "evaluator": {"testSet": stored}}])
    evaluation_results = model_evaluation(namespace, results=results["spec"]["gate"]["results"])

    assert refusal(naming) is None  # without the policy anyone who may create a rollout may name it
    with installed_chart(
        local_bed.kubeconfig, namespace, {"rbac.scope": "namespaces", "watchNamespaces": [namespace]}
    ):
        for manifest in (naming, results, evaluation, evaluation_results, replaying):
            refused = wait_for(
                lambda m=manifest: refusal(m), timeout=30, what="the admission policy to refuse"
            )
            assert refused.status == 403 and "team-b-store" in str(refused.body)
        assert refusal(gated_rollout(namespace, [EVALUATOR_CHECK], [{"setWeight": 50}])) is None
        assert refusal(model_evaluation(namespace)) is None  # no storage Secret named

        grant(api_client, namespace, "store", [secret_readers(["team-b-store"])])
        wait_for(lambda: refusal(naming) is None, timeout=30, what="a tenant who may read it to be admitted")
        assert refusal(evaluation) is None
