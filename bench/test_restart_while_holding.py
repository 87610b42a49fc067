"""The operator SIGKILLed while it holds evaluations it has not written (core/stepping.py) evaluates
again before it completes the step. Its 20 s pause (the hold must outlast the kill) keeps it out of
`make test`; the hold's decisions are unit-tested there (tests/unit/test_status_hold.py,
tests/unit/test_reconciler_status_hold.py)."""

from __future__ import annotations

import time

import pytest
from kubernetes import client

from modelgate.api import Phase
from testbed.localcluster import LocalCluster
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.cluster.test_rollout_restart import paused_rollout
from tests.support.scenario import serving, settled

pytestmark = pytest.mark.bench

HELD_PAUSE_SECONDS = 20


def test_operator_killed_while_holding_evaluations_evaluates_again_before_it_moves_on(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    # Shorter than MAX_STATUS_HOLD: the pause's evaluations are held until it ends.
    manifest = paused_rollout(local_bed, namespace, HELD_PAUSE_SECONDS)
    ticks, ours = "modelgate_rollout_reconciles_total", {"namespace": namespace, "rollout": "chat"}
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)
        pausing = scenario.wait_for_status("the timed pause", lambda s: s.current_step_index == 1)
        written = pausing.last_analysis_at
        assert written is not None
        ticked = operator.counter(ticks, **ours)
        # Evaluations made since (one a tick, at a 1 s interval) that the stored status does not have.
        wait_for(
            lambda: operator.counter(ticks, **ours) >= ticked + 3, timeout=60, what="evaluations in the pause"
        )
        holding = scenario.status()
        assert (holding.current_step_index, holding.last_analysis_at) == (1, written)

        operator.kill()
        killed_at = time.time()
        operator.start()

        final = scenario.wait_for_status("success", settled(Phase.SUCCEEDED))
        assert final.last_analysis_at is not None and final.last_analysis_at.timestamp() > killed_at
        assert final.analysis and all(metric.failures == 0 for metric in final.analysis)
        weights = scenario.recorder.candidate_weights()
        assert weights == sorted(weights) == [0, 20, 100]
        full_at = scenario.recorder.first_time_at(100, after=0)
        assert pausing.step_started_at is not None and full_at is not None
        assert full_at >= pausing.step_started_at.timestamp() + HELD_PAUSE_SECONDS
