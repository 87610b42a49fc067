"""Prometheus stopped mid-rollout: by default the rollout pauses and nothing is promoted; with
`onPrometheusError: rollback` it rolls back after maxConsecutiveErrors failed runs."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from modelgate.api import Phase, Verdict
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.cli import modelgate
from tests.support.scenario import Scenario, serving

# A long pause after 20%: whatever passes, the rollout stays at 20% while the test runs.
STEPS = [{"setWeight": 20}, {"pause": {"duration": "1h"}}, {"setWeight": 100}]


@pytest.fixture
def prometheus_restarted(local_bed: LocalCluster) -> Iterator[None]:
    """Whatever a test does to Prometheus, the next test finds it running."""
    yield
    if not any(p.name == "prometheus" for p in local_bed.processes.load()):
        local_bed.start_prometheus()


def start_and_stop_prometheus(scenario: Scenario, bed: LocalCluster) -> None:
    scenario.wait_for_status(
        "a first passing analysis at 20%",
        lambda s: s.current_weight == 20 and s.analysis and s.analysis[0].verdict is Verdict.PASS,
    )
    bed.stop_component("prometheus")


@pytest.mark.usefixtures("prometheus_restarted")
def test_default_policy_pauses_promotes_nothing_and_resumes_on_command(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 20}, {"pause": {"duration": "3s"}}, {"setWeight": 100}],
        prometheus=local_bed.prometheus_url,
        metrics=SEED_METRICS,
        interval="1s",
        rollback={"maxConsecutiveErrors": 2},
    )
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)
        start_and_stop_prometheus(scenario, local_bed)
        paused = scenario.wait_for_status("the rollout to pause", lambda s: s.phase is Phase.PAUSED)
        assert "resume" in (paused.message or "")
        # Well past the 3 s pause, the rollout still holds: no promotion without data.
        held = scenario.wait_for_status("six failed runs", lambda s: s.consecutive_prometheus_errors >= 6)
        assert held.phase is Phase.PAUSED
        assert held.current_weight == 20
        assert {m.verdict for m in held.analysis} == {Verdict.ERROR}
        assert scenario.recorder.candidate_weights() == [0, 20]

        local_bed.start_prometheus()
        resumed = modelgate(operator.kubeconfig, "resume", "chat", "-n", namespace)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        final = scenario.wait_for_status("success after resume", lambda s: s.phase is Phase.SUCCEEDED)
        assert final.current_weight == 100
        assert scenario.recorder.candidate_weights() == [0, 20, 100]


@pytest.mark.usefixtures("prometheus_restarted")
def test_rollback_policy_rolls_back_after_max_consecutive_errors(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    manifest = model_rollout(
        "chat",
        namespace,
        steps=STEPS,
        prometheus=local_bed.prometheus_url,
        metrics=SEED_METRICS,
        interval="1s",
        rollback={"onPrometheusError": "rollback", "maxConsecutiveErrors": 3},
    )
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)
        start_and_stop_prometheus(scenario, local_bed)
        rolled_back = scenario.wait_for_status("a rollback", lambda s: s.phase is Phase.ROLLED_BACK)
        assert rolled_back.consecutive_prometheus_errors == 3
        assert rolled_back.rollback_reason is not None
        assert "3 time(s) in a row" in rolled_back.rollback_reason.message
        scenario.wait_for_status("the route at 0", lambda s: scenario.recorder.candidate_weights()[-1] == 0)
        assert scenario.recorder.candidate_weights() == [0, 20, 0]
