"""A pool that grows to 50 Pods named by hand keeps its rollout judging, and a breach still rolls it
back: the attack was 12 such Pods pushing the pod regex past its limit, which failed the rollout with
its weight where it was. In `make bench` (48 Pods created, 11 s of a worker); `make test` runs the
pools' rollouts in test_rollout_inference_pools.py, and the pod regex's bounds in unit tests."""

from __future__ import annotations

import pytest
from kubernetes import client

from modelgate.api import ModelRolloutStatus, Phase
from modelgate.core import ConditionType
from modelgate.core.reasons import condition
from testbed.localcluster import LocalCluster
from testbed.manifests import Manifest
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.cluster.test_rollout_inference_pools import FINISHED, analysed_pool_rollout
from tests.support.kube import create
from tests.support.scenario import serving

pytestmark = pytest.mark.bench
POOL_LABEL = "app.kubernetes.io/name"  # what serving()'s pools select their Pods by


def test_a_pool_growing_to_50_pods_named_by_hand_keeps_its_rollout_judging(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    """The attack: 12 such Pods pushed the pod regex past its limit, and the rollout went Failed with
    its weight where it was. Now the regex names the Pods' name prefix, and a breach still rolls back."""
    manifest = analysed_pool_rollout(local_bed, namespace, [{"setWeight": 20}, {"pause": {}}])
    with serving(local_bed, api_client, namespace, Behaviour(), inference_pools=True) as scenario:
        scenario.apply(manifest)
        scenario.wait_for_status(
            "the rollout to hold at 20", lambda s: s.phase is Phase.PAUSED and s.live_weight == 20
        )
        for index in range(48):  # and the Deployment's 2: 50 Pods in the pool
            create(
                api_client, pod_named_by_hand(f"chat-v2-extra-{index}", namespace, {POOL_LABEL: "chat-v2"})
            )

        def judged_with_50_pods() -> ModelRolloutStatus | None:
            status = scenario.status()
            assert status.phase is not Phase.FAILED, status.message
            counted = condition(status.conditions, ConditionType.CANDIDATE_AVAILABLE)
            grown = counted is not None and "of 50 selected Pods" in counted.message
            queries = [m.query or "" for m in status.analysis]
            return status if grown and any("chat-v2-extra-[a-z0-9]+" in q for q in queries) else None

        judged = wait_for(judged_with_50_pods, timeout=90, what="an analysis of the pool's 50 Pods")
        assert judged.phase is Phase.PAUSED and judged.live_weight == 20
        scenario.fleet.set_behaviour("chat-v2", Behaviour(error_rate=0.5))
        final = scenario.wait_for_status("the rollout to end", lambda s: s.phase in FINISHED)
        assert final.phase is Phase.ROLLED_BACK, final.message
        assert scenario.recorder.weights_until(0) == [0, 20, 0]


def pod_named_by_hand(name: str, namespace: str, labels: dict[str, str]) -> Manifest:
    """A Pod with a name of its own (no generateName, no owner), as a person or a StatefulSet makes."""
    container = {
        "name": "server",
        "image": "modelgate/model-server-double",
        "ports": [{"containerPort": 8000}],
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"containers": [container]},
    }
