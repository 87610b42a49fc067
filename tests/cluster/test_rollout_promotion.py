"""A good candidate walks every step and is promoted; the route's weights follow the steps exactly, and
stay at 100 after another writer changes them. The first rollout is docs/topologies/
single-deployment.md's manifest, applied as the page shows it (testbed/topologies.py: on the bed's
Prometheus and time)."""

from __future__ import annotations

from kubernetes import client

from modelgate.api import Phase, Verdict
from testbed.localcluster import LocalCluster
from testbed.manifests import GATEWAY_GROUP, GATEWAY_VERSION, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.topologies import candidate_weights, model_rollout_of, on_the_bed
from tests.support.scenario import serving


def test_good_candidate_is_promoted_step_by_step(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    page = on_the_bed(
        "single-deployment", namespace, local_bed.prometheus_url, interval="2s", min_requests=20
    )
    rollout = model_rollout_of(page)
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        for document in page:
            scenario.apply(document)
        final = scenario.wait_for_status(
            "the rollout to succeed",
            lambda s: s.phase in (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED),
            timeout=120,
        )
        assert final.phase is Phase.SUCCEEDED, final.message
        assert final.current_weight == 100
        metrics = rollout["spec"]["analysis"]["metrics"]
        assert {m.name: m.verdict for m in final.analysis} == {m["name"]: Verdict.PASS for m in metrics}
        scenario.wait_for_status(
            "the route to show 100", lambda s: scenario.recorder.candidate_weights()[-1] == 100
        )
        assert scenario.recorder.candidate_weights() == candidate_weights(rollout)


def test_a_succeeded_rollout_sets_right_a_route_another_writer_changed(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    # A finished rollout sleeps FINISHED_RESYNC (5 minutes); the route's watch is what wakes it.
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(model_rollout("chat", namespace, steps=[{"setWeight": 50}]))
        scenario.wait_for_status("the rollout to succeed", lambda s: s.phase is Phase.SUCCEEDED)
        scenario.wait_for_status(
            "the route to show 100", lambda s: scenario.recorder.candidate_weights()[-1] == 100
        )
        client.CustomObjectsApi(api_client).patch_namespaced_custom_object(
            GATEWAY_GROUP,
            GATEWAY_VERSION,
            namespace,
            "httproutes",
            "chat",
            [{"op": "replace", "path": "/spec/rules/0/backendRefs/1/weight", "value": 20}],
            _content_type="application/json-patch+json",
        )
        scenario.wait_for_status(
            "the route to show 100 again",
            lambda s: scenario.recorder.candidate_weights()[-2:] == [20, 100],
            timeout=60,
        )
