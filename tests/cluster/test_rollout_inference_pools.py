"""Rollouts between two InferencePools on the bed: the operator moves the weights of the pools'
backendRefs, the traffic driver sends each pool's share to the doubles of the Pods its selector
selects, and the bed's Prometheus counts those requests. A pool that does not exist holds the rollout
Pending, naming the field, until it appears."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from modelgate.api import Phase, Verdict
from modelgate.core import ConditionType
from modelgate.core.reasons import condition
from modelgate.metrics.prometheus_http import PrometheusClient
from testbed.inference_pools import inference_pool, pool_http_route
from testbed.localcluster import LocalCluster, kubectl
from testbed.manifests import SEED_METRICS, Manifest, model_deployment, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.versions import REPO_ROOT
from testbed.waiting import wait_for
from tests.support.cli import modelgate
from tests.support.clusters import TestCluster
from tests.support.kube import create
from tests.support.scenario import POOLS, Rollouts, serving

FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)
EXAMPLE = REPO_ROOT / "examples" / "rollout-inference-pools.yaml"


def pool_rollout(
    namespace: str, steps: list[dict[str, Any]], pools: tuple[str, str] = POOLS, **fields: Any
) -> Manifest:
    """model_rollout between two InferencePools: the backends are the pools themselves."""
    incumbent, candidate = pools
    manifest = model_rollout(
        "chat", namespace, steps=steps, incumbent=incumbent, candidate=candidate, **fields
    )
    manifest["spec"]["incumbent"] = {"inferencePool": incumbent}
    manifest["spec"]["candidate"] = {"inferencePool": candidate}
    return manifest


def analysed_pool_rollout(bed: LocalCluster, namespace: str, steps: list[dict[str, Any]]) -> Manifest:
    """pool_rollout judged on the seed metrics every second."""
    return pool_rollout(namespace, steps, prometheus=bed.prometheus_url, metrics=SEED_METRICS, interval="1s")


def wait_for_candidate_share(bed: LocalCluster, namespace: str, expected: float) -> None:
    """Until the candidate's doubles (chat-v2's Pods) answered `expected` of the last 5 s of requests
    (within 0.1), by their own request counters."""
    prometheus = PrometheusClient(bed.prometheus_url, timeout=2)
    selector = f'namespace="{namespace}"'
    candidate = f'sum(rate(http_requests_total{{{selector},deployment="chat-v2"}}[5s]))'
    total = f"sum(rate(http_requests_total{{{selector}}}[5s]))"

    def near() -> bool:
        share = prometheus.query(f"{candidate} / {total}").value
        return share is not None and abs(share - expected) <= 0.1

    wait_for(near, timeout=60, interval=1, what=f"the candidate's share of requests at {expected}")


def test_a_rollout_between_two_pools_is_promoted_with_traffic_by_the_pools_weights(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    manifest = analysed_pool_rollout(local_bed, namespace, [{"setWeight": 50}, {"pause": {}}])
    with serving(local_bed, api_client, namespace, Behaviour(), inference_pools=True) as scenario:
        scenario.apply(manifest)
        held = scenario.wait_for_status(
            "the rollout to hold at 50", lambda s: s.phase is Phase.PAUSED and s.live_weight == 50
        )
        available = condition(held.conditions, ConditionType.CANDIDATE_AVAILABLE)
        assert available is not None and available.status == "True"
        assert "2 of 2 selected Pods Ready" in available.message
        wait_for_candidate_share(local_bed, namespace, 0.5)

        promoted = modelgate(local_bed.kubeconfig, "promote", "chat", "-n", namespace, "--no-wait")
        assert promoted.returncode == 0, promoted.stderr
        final = scenario.wait_for_status("the rollout to end", lambda s: s.phase in FINISHED)
        assert final.phase is Phase.SUCCEEDED, final.message
        # Every metric passed on the pools' own Pods: with no series they would be Inconclusive.
        assert {m.name: m.verdict for m in final.analysis} == {m["name"]: Verdict.PASS for m in SEED_METRICS}
        assert scenario.recorder.weights_until(100) == [0, 50, 100]
        wait_for_candidate_share(local_bed, namespace, 1.0)


def test_a_breaching_pool_is_rolled_back(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    manifest = analysed_pool_rollout(local_bed, namespace, [{"setWeight": 20}, {"pause": {}}])
    candidate = Behaviour(error_rate=0.08)
    with serving(local_bed, api_client, namespace, candidate, inference_pools=True) as scenario:
        scenario.apply(manifest)
        final = scenario.wait_for_status("the rollout to end", lambda s: s.phase in FINISHED)
        assert final.phase is Phase.ROLLED_BACK, final.message
        reason = final.rollback_reason
        assert reason is not None and reason.metric == "error-rate"
        # The query selected the candidate pool's Pods, by their ReplicaSet's name prefix.
        assert reason.query is not None and 'pod=~"chat-v2-' in reason.query
        assert scenario.recorder.weights_until(0) == [0, 20, 0]
        wait_for_candidate_share(local_bed, namespace, 0.0)


def test_a_pool_that_does_not_exist_holds_the_rollout_pending_until_it_appears(
    api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    create(api_client, model_deployment("chat-v2", namespace, replicas=1))
    create(api_client, inference_pool("pool-v1", namespace, {"app.kubernetes.io/name": "chat-v1"}))
    create(api_client, pool_http_route("chat", namespace, {"pool-v1": 100, "pool-v3": 0}))
    rollouts = Rollouts(api_client, namespace)
    rollouts.apply(pool_rollout(namespace, [{"setWeight": 30}], pools=("pool-v1", "pool-v3")))
    missing = f"InferencePool {namespace}/pool-v3 (spec.candidate.inferencePool) not found"
    rollouts.wait_for_status(
        "the rollout to wait for the pool",
        lambda s: s.phase is Phase.PENDING and missing in (s.message or ""),
    )

    create(api_client, inference_pool("pool-v3", namespace, {"app.kubernetes.io/name": "chat-v2"}))
    final = rollouts.wait_for_status("the rollout to end", lambda s: s.phase in FINISHED)
    assert final.phase is Phase.SUCCEEDED, final.message


def test_the_example_is_accepted_by_the_api_server(cluster: TestCluster, namespace: str) -> None:
    applied = kubectl(cluster.kubeconfig, "apply", "--dry-run=server", "-n", namespace, "-f", str(EXAMPLE))
    assert applied.splitlines() == [
        "inferencepool.inference.networking.k8s.io/pool-v1 created (server dry run)",
        "inferencepool.inference.networking.k8s.io/pool-v2 created (server dry run)",
        "httproute.gateway.networking.k8s.io/chat-pools created (server dry run)",
        "modelrollout.modelgate.io/chat-pools created (server dry run)",
    ]
