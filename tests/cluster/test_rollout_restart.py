"""The operator SIGKILLed during a timed pause resumes at the same step, with the remaining pause
computed from status; no weight ever moves backwards. (Killed while it holds evaluations it has not
written: bench/test_restart_while_holding.py.) SIGTERM ends an idle operator at once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kubernetes import client

from modelgate.api import Phase
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.scenario import serving, settled

PAUSE_SECONDS = 8


def paused_rollout(local_bed: LocalCluster, namespace: str, pause_seconds: int) -> dict[str, Any]:
    """20%, a timed pause, 100%; evaluated every second."""
    steps = [{"setWeight": 20}, {"pause": {"duration": f"{pause_seconds}s"}}, {"setWeight": 100}]
    return model_rollout(
        "chat",
        namespace,
        steps=steps,
        prometheus=local_bed.prometheus_url,
        metrics=SEED_METRICS,
        interval="1s",
    )


def test_operator_killed_mid_pause_resumes_the_same_pause(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    manifest = paused_rollout(local_bed, namespace, PAUSE_SECONDS)
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)
        pausing = scenario.wait_for_status("the timed pause", lambda s: s.current_step_index == 1)
        assert pausing.step_started_at is not None
        pause_ends = pausing.step_started_at.timestamp() + PAUSE_SECONDS

        operator.kill()
        operator.start()
        after_restart = scenario.status()
        assert after_restart.step_started_at == pausing.step_started_at
        assert after_restart.current_step_index in (1, 3)  # 3: done, if the restart outlasted the pause

        final = scenario.wait_for_status("success", settled(Phase.SUCCEEDED))
        assert final.current_weight == 100
        full_at = scenario.recorder.first_time_at(100, after=0)
        assert full_at is not None
        # Not before the pause's end as recorded in status, and not long after it either.
        assert pause_ends <= full_at < pause_ends + 10, (full_at - pause_ends, time.time() - pause_ends)
        weights = scenario.recorder.candidate_weights()
        assert weights == sorted(weights) == [0, 20, 100]


def test_sigterm_ends_an_idle_operator_without_waiting_on_idle_threads(
    operator: OperatorProcess, record_property: Callable[[str, object], None]
) -> None:
    """With no tick running, nothing holds the exit: kopf's idle handler threads held every stop for
    the whole grace (3 s), logged as threads still running."""
    logged_before = len(operator.log_records())
    started = time.monotonic()
    operator.stop()
    took = time.monotonic() - started
    operator.start()
    record_property("SIGTERM to exit of an idle operator (s)", round(took, 2))
    at_stop = [record["event"] for record in operator.log_records()[logged_before:]]
    assert "exiting with threads still running" not in at_stop
