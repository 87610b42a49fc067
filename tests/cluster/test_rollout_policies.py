"""Issue 38, item 4: a plan written once in a ClusterModelRolloutPolicy. Two rollouts in two
namespaces that name one policy both succeed by it (and a namespaced ModelRolloutPolicy plans the
rollouts of its namespace); a policy edited mid-rollout sets PolicyDrift and changes no verdict (the
pinned steps and metrics run on) until `modelgate repin` adopts it; a rollout naming a policy that
does not exist holds at weight 0 naming it, and goes on once the policy is created."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from modelgate import API_GROUP, API_VERSION
from modelgate.api import ConditionStatus, ModelRolloutStatus, PauseReason, Phase, Verdict
from modelgate.api.policy_ref import CLUSTER_POLICY_KIND, CLUSTER_POLICY_PLURAL, POLICY_KIND, POLICY_PLURAL
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, Manifest, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.cli import modelgate
from tests.support.kube import scratch_namespace
from tests.support.scenario import Scenario, serving

ENDED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)
# What the rollout takes from the policy; the rollout writes only its sides and route.
SECTIONS = ("steps", "analysis", "rollback")


def policy_spec(prometheus: str, steps: list[dict[str, Any]], metrics: list[dict[str, Any]]) -> Manifest:
    return {
        "steps": steps,
        "analysis": {
            "interval": "2s",
            "minRequests": 20,
            "prometheus": {"address": prometheus, "timeout": "2s"},
            "metrics": metrics,
        },
        "rollback": {"onPrometheusError": "pause", "maxConsecutiveErrors": 3},
    }


def rollout_naming(policy: str, namespace: str) -> Manifest:
    """The bed's ModelRollout between chat-v1 and chat-v2, its plan left to the policy."""
    manifest = model_rollout("chat", namespace, steps=[])
    for section in SECTIONS:
        manifest["spec"].pop(section, None)
    manifest["spec"]["policyRef"] = {"kind": CLUSTER_POLICY_KIND, "name": policy}
    return manifest


class ClusterPolicies:
    """ClusterModelRolloutPolicies a test creates, edits and deletes (cluster-scoped: each test names
    its own after its namespace, and deletes them at the end)."""

    def __init__(self, api_client: client.ApiClient) -> None:
        self.api = client.CustomObjectsApi(api_client)
        self.created: list[str] = []

    def create(self, name: str, spec: Manifest) -> None:
        body = {
            "apiVersion": f"{API_GROUP}/{API_VERSION}",
            "kind": CLUSTER_POLICY_KIND,
            "metadata": {"name": name},
            "spec": spec,
        }
        self.api.create_cluster_custom_object(API_GROUP, API_VERSION, CLUSTER_POLICY_PLURAL, body)
        self.created.append(name)

    def replace_spec(self, name: str, spec: Manifest) -> int:
        """Replaces the policy's spec; returns its new generation."""
        patch = [{"op": "replace", "path": "/spec", "value": spec}]
        edited = self.api.patch_cluster_custom_object(
            API_GROUP,
            API_VERSION,
            CLUSTER_POLICY_PLURAL,
            name,
            patch,
            _content_type="application/json-patch+json",
        )
        return int(edited["metadata"]["generation"])

    def delete_all(self) -> None:
        for name in self.created:
            try:
                self.api.delete_cluster_custom_object(API_GROUP, API_VERSION, CLUSTER_POLICY_PLURAL, name)
            except ApiException as error:
                if error.status != 404:
                    raise


@contextmanager
def cluster_policies(api_client: client.ApiClient) -> Iterator[ClusterPolicies]:
    policies = ClusterPolicies(api_client)
    try:
        yield policies
    finally:
        policies.delete_all()


def drift_message(status: ModelRolloutStatus) -> str | None:
    found = next((c for c in status.conditions if c.type == "PolicyDrift"), None)
    return found.message if found is not None and found.status is ConditionStatus.TRUE else None


def test_two_namespaces_roll_out_by_one_cluster_policy(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    steps = [{"setWeight": 10}, {"setWeight": 50}]
    with cluster_policies(api_client) as policies, ExitStack() as stack:
        name = f"shared-{namespace}"
        policies.create(name, policy_spec(local_bed.prometheus_url, steps, SEED_METRICS))
        other = stack.enter_context(scratch_namespace(api_client))
        scenarios: list[Scenario] = [
            stack.enter_context(serving(local_bed, api_client, ns, Behaviour())) for ns in (namespace, other)
        ]
        for scenario in scenarios:
            scenario.apply(rollout_naming(name, scenario.namespace))
        for scenario in scenarios:
            final = scenario.wait_for_status("the rollout to end", lambda s: s.phase in ENDED, timeout=120)
            assert final.phase is Phase.SUCCEEDED, final.message
            assert {m.name: m.verdict for m in final.analysis} == {
                m["name"]: Verdict.PASS for m in SEED_METRICS
            }
            assert scenario.recorder.weights_until(100) == [0, 10, 50, 100]
            assert final.policy is not None and (final.policy.name, final.policy.generation) == (name, 1)
        hashes = {s.status().policy.resolved_hash for s in scenarios}  # type: ignore[union-attr]
        assert len(hashes) == 1  # one plan: the same sides and route, the same policy


def test_a_policy_edited_mid_rollout_drifts_and_changes_no_verdict(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    pinned_steps = [{"setWeight": 10}, {"pause": {"duration": "8s"}}, {"setWeight": 50}]
    with (
        cluster_policies(api_client) as policies,
        serving(local_bed, api_client, namespace, Behaviour()) as scenario,
    ):
        name = f"edited-{namespace}"
        policies.create(name, policy_spec(local_bed.prometheus_url, pinned_steps, SEED_METRICS))
        scenario.apply(rollout_naming(name, namespace))
        scenario.wait_for_status(
            "the pause step", lambda s: s.current_step_index == 1 and s.phase is Phase.PROGRESSING
        )
        # The edit would roll the candidate back at once (a latency bound no server meets) and skip
        # the pause: pinned, the rollout does neither.
        strict = [{"name": "strict-latency", "preset": "latencyP99", "max": 0.0001}]
        generation = policies.replace_spec(
            name, policy_spec(local_bed.prometheus_url, [{"setWeight": 90}], strict)
        )
        drifted = scenario.wait_for_status("PolicyDrift", lambda s: drift_message(s) is not None)
        message = drift_message(drifted)
        assert (
            message is not None and f"generation {generation}" in message and "generation 1 pinned" in message
        )
        final = scenario.wait_for_status("the rollout to end", lambda s: s.phase in ENDED, timeout=120)
        assert final.phase is Phase.SUCCEEDED, final.message
        assert {m.name: m.verdict for m in final.analysis} == {m["name"]: Verdict.PASS for m in SEED_METRICS}
        assert scenario.recorder.weights_until(100) == [0, 10, 50, 100]
        assert final.policy is not None and final.policy.generation == 1
        # The pause step ran its pinned duration: step 2 started at least 8 s after step 1.
        assert final.step_starts[2] - final.step_starts[1] >= 8
        # `modelgate repin` adopts the edited policy: pinned at its generation, the drift gone.
        repinned = modelgate(local_bed.kubeconfig, "repin", "chat", "-n", namespace)
        assert repinned.returncode == 0, repinned.stdout + repinned.stderr
        adopted = scenario.status()
        assert adopted.policy is not None and adopted.policy.generation == generation
        assert drift_message(adopted) is None


def test_a_missing_policy_holds_at_weight_zero_until_it_is_created(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    with (
        cluster_policies(api_client) as policies,
        serving(local_bed, api_client, namespace, Behaviour()) as scenario,
    ):
        name = f"late-{namespace}"
        scenario.apply(rollout_naming(name, namespace))
        held = scenario.wait_for_status(
            "the hold", lambda s: s.pause is not None and s.pause.reason is PauseReason.POLICY_UNRESOLVED
        )
        assert held.phase is Phase.PENDING and held.current_weight == 0
        assert held.message is not None and "spec.policyRef" in held.message and name in held.message
        assert scenario.recorder.candidate_weights() == [0]
        policies.create(name, policy_spec(local_bed.prometheus_url, [{"setWeight": 20}], SEED_METRICS))
        final = scenario.wait_for_status("the rollout to end", lambda s: s.phase in ENDED, timeout=120)
        assert final.phase is Phase.SUCCEEDED, final.message
        assert final.pause is None
        assert scenario.recorder.weights_until(100) == [0, 20, 100]


def test_a_namespaced_policy_plans_the_rollouts_of_its_namespace(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        policy = {
            "apiVersion": f"{API_GROUP}/{API_VERSION}",
            "kind": POLICY_KIND,
            "metadata": {"name": "team-defaults", "namespace": namespace},
            "spec": policy_spec(local_bed.prometheus_url, [{"setWeight": 40}], SEED_METRICS),
        }
        client.CustomObjectsApi(api_client).create_namespaced_custom_object(
            API_GROUP, API_VERSION, namespace, POLICY_PLURAL, policy
        )
        rollout = rollout_naming("team-defaults", namespace)
        rollout["spec"]["policyRef"]["kind"] = POLICY_KIND
        scenario.apply(rollout)
        final = scenario.wait_for_status("the rollout to end", lambda s: s.phase in ENDED, timeout=120)
        assert final.phase is Phase.SUCCEEDED, final.message
        assert scenario.recorder.weights_until(100) == [0, 40, 100]
        assert final.policy is not None and final.policy.kind.value == POLICY_KIND
