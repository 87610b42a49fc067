"""A good candidate walks every step and is promoted; the route's weights follow the steps exactly."""

from __future__ import annotations

from kubernetes import client

from modelgate.api import Phase, Verdict
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.scenario import serving


def test_good_candidate_is_promoted_step_by_step(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    steps = [{"setWeight": 10}, {"setWeight": 30}, {"pause": {"duration": "3s"}}, {"setWeight": 60}]
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(
            model_rollout(
                "chat", namespace, steps=steps, prometheus=local_bed.prometheus_url, metrics=SEED_METRICS
            )
        )
        final = scenario.wait_for_status(
            "the rollout to succeed",
            lambda s: s.phase in (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED),
            timeout=120,
        )
        assert final.phase is Phase.SUCCEEDED, final.message
        assert final.current_weight == 100
        assert {m.name: m.verdict for m in final.analysis} == {m["name"]: Verdict.PASS for m in SEED_METRICS}
        scenario.wait_for_status(
            "the route to show 100", lambda s: scenario.recorder.candidate_weights()[-1] == 100
        )
        assert scenario.recorder.candidate_weights() == [0, 10, 30, 60, 100]
