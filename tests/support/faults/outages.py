"""Components of the bed going away mid-rollout and coming back: the API server (SIGKILLed) and
Prometheus (stopped for longer than `maxConsecutiveErrors` intervals)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from modelgate.api import Phase, Verdict
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_deployment, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.cli import modelgate
from tests.support.faults.common import TIMED_WEIGHTS, plain_rollout_at_step, timed_steps, wait_phase
from tests.support.kube import create, wait_deployment_available
from tests.support.scenario import Scenario, serving, settled


def api_server_restart(
    bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    *,
    down_seconds: float,
    pause_seconds: float,
) -> dict[str, float]:
    """kube-apiserver SIGKILLed during a timed pause and started again `down_seconds` later (etcd keeps
    the state): the rollout then completes, its weights as the steps say. The scenario ends once the
    rest of the control plane acts again (see `_controllers_acting`)."""
    with plain_rollout_at_step(api_client, namespace, timed_steps(pause_seconds)) as recorder:
        bed.kill_component("kube-apiserver")
        killed_at = time.monotonic()
        try:
            time.sleep(down_seconds)  # the outage itself
        finally:
            bed.start_api_server()
        back_at = time.monotonic()
        final = wait_phase(api_client, namespace, "chat", (Phase.SUCCEEDED,), timeout=4 * pause_seconds + 90)
        done_at = time.monotonic()
        assert final.current_weight == 100
        seen = recorder.candidate_weights()
        assert seen == TIMED_WEIGHTS, f"the route showed candidate weights {seen}"
    _controllers_acting(api_client, namespace)
    return {
        "down_seconds": back_at - killed_at,
        "back_to_succeeded_seconds": done_at - back_at,
        "back_to_controllers_acting_seconds": time.monotonic() - back_at,
    }


def _controllers_acting(api_client: client.ApiClient, namespace: str) -> None:
    """Waits until a new Deployment becomes Available: the controller-manager and the scheduler act
    again. An outage past their lease's renew deadline makes both exit; the bed starts them again as a
    kubelet would, and they wait out the old lease (15 s) first. Whatever runs next needs them."""
    create(api_client, model_deployment("after-outage", namespace, replicas=1, image="probe"))
    wait_deployment_available(api_client, namespace, "after-outage", timeout=120)


@dataclass(frozen=True)
class PrometheusOutage:
    max_consecutive_errors: int
    failed_runs: int  # failed analysis runs to see while Prometheus is down (default policy)


def _outage_rollout(
    bed: LocalCluster, namespace: str, steps: list[dict[str, Any]], rollback: dict[str, Any]
) -> Any:
    return model_rollout(
        "chat",
        namespace,
        steps=steps,
        prometheus=bed.prometheus_url,
        metrics=SEED_METRICS,
        interval="1s",
        rollback=rollback,
    )


def _stop_prometheus_after_a_pass(scenario: Scenario, bed: LocalCluster) -> None:
    scenario.wait_for_status(
        "a first passing analysis at 20%",
        lambda s: s.current_weight == 20 and s.analysis and s.analysis[0].verdict is Verdict.PASS,
    )
    bed.stop_component("prometheus")


def prometheus_outage_pauses(
    bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    size: PrometheusOutage,
) -> dict[str, float]:
    """Default policy (`onPrometheusError: pause`): the rollout pauses after maxConsecutiveErrors failed
    runs, holds its weight through `failed_runs` of them (well past its timed pause: no promotion on
    missing data), and completes after Prometheus is back and `modelgate resume`."""
    steps = [{"setWeight": 20}, {"pause": {"duration": "3s"}}, {"setWeight": 100}]
    manifest = _outage_rollout(bed, namespace, steps, {"maxConsecutiveErrors": size.max_consecutive_errors})
    with serving(bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)
        _stop_prometheus_after_a_pass(scenario, bed)
        stopped_at = time.monotonic()
        paused = scenario.wait_for_status("the rollout to pause", lambda s: s.phase is Phase.PAUSED)
        assert "resume" in (paused.message or "")
        assert paused.consecutive_prometheus_errors == size.max_consecutive_errors
        held = scenario.wait_for_status(
            f"{size.failed_runs} failed runs",
            lambda s: s.consecutive_prometheus_errors >= size.failed_runs,
            timeout=size.failed_runs * 3 + 60,
        )
        assert held.phase is Phase.PAUSED
        assert held.current_weight == 20
        assert {m.verdict for m in held.analysis} == {Verdict.ERROR}
        assert scenario.recorder.candidate_weights() == [0, 20]

        bed.start_prometheus()
        down_seconds = time.monotonic() - stopped_at
        resumed = modelgate(operator.kubeconfig, "resume", "chat", "-n", namespace)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        final = scenario.wait_for_status("success after resume", settled(Phase.SUCCEEDED))
        assert final.current_weight == 100
        assert scenario.recorder.candidate_weights() == [0, 20, 100]
    return {"prometheus_down_seconds": down_seconds}


def prometheus_outage_rolls_back(
    bed: LocalCluster, api_client: client.ApiClient, namespace: str, size: PrometheusOutage
) -> dict[str, float]:
    """`onPrometheusError: rollback`: rolled back after exactly maxConsecutiveErrors failed runs."""
    steps = [{"setWeight": 20}, {"pause": {"duration": "1h"}}, {"setWeight": 100}]
    rollback = {"onPrometheusError": "rollback", "maxConsecutiveErrors": size.max_consecutive_errors}
    with serving(bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(_outage_rollout(bed, namespace, steps, rollback))
        _stop_prometheus_after_a_pass(scenario, bed)
        stopped_at = time.monotonic()
        rolled_back = scenario.wait_for_status("a rollback", lambda s: s.phase is Phase.ROLLED_BACK)
        rolled_back_after = time.monotonic() - stopped_at
        assert rolled_back.consecutive_prometheus_errors == size.max_consecutive_errors
        assert rolled_back.rollback_reason is not None
        assert f"failed {size.max_consecutive_errors} time" in rolled_back.rollback_reason.message
        scenario.wait_for_status("the route at 0", lambda s: scenario.recorder.candidate_weights()[-1] == 0)
        assert scenario.recorder.candidate_weights() == [0, 20, 0]
        bed.start_prometheus()
    return {"stopped_to_rolled_back_seconds": rolled_back_after}
