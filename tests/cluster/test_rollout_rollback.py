"""Breaches roll back at once; too little traffic is Inconclusive and never promoted, and rolls back
when it outlasts its progress deadline."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import pytest
from kubernetes import client

from modelgate.api import Phase, Verdict
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour, Latency
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.scenario import Scenario, serving

# The candidate takes 20% and then waits for a promote that never comes: only a breach moves it.
HOLD_AT_20: list[dict[str, Any]] = [{"setWeight": 20}, {"pause": {}}]
FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)


@pytest.mark.parametrize(
    ("candidate", "breached", "threshold"),
    [
        pytest.param(Behaviour(error_rate=0.08), "error-rate", 0.01, id="8% 5xx"),
        pytest.param(
            Behaviour(latency=Latency(median=0.2, tail_rate=0.05, tail_latency=8.0)),
            "p99-latency",
            2.5,
            id="slow tail",
        ),
        pytest.param(Behaviour(refusal_rate=0.2), "refusal-rate", 0.05, id="refusals, no errors"),
    ],
)
def test_breach_rolls_back_at_once(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    candidate: Behaviour,
    breached: str,
    threshold: float,
    record_property: Callable[[str, object], None],
) -> None:
    manifest = model_rollout(
        "chat",
        namespace,
        steps=HOLD_AT_20,
        prometheus=local_bed.prometheus_url,
        metrics=SEED_METRICS,
        interval="1s",
    )
    with serving(local_bed, api_client, namespace, candidate) as scenario:
        scenario.apply(manifest)
        final = scenario.wait_for_status("a rollback", lambda s: s.phase in FINISHED)
        assert final.phase is Phase.ROLLED_BACK, final.message
        reason = final.rollback_reason
        assert reason is not None and reason.metric == breached
        assert reason.threshold == threshold
        assert reason.value is None or reason.value > threshold  # None: +Inf, described in the message
        assert reason.query and "chat-v2" in reason.query
        verdicts = {m.name: m.verdict for m in final.analysis}
        assert verdicts[breached] is Verdict.FAIL
        assert all(v is not Verdict.FAIL for name, v in verdicts.items() if name != breached), verdicts

        # From the breaching evaluation to the route showing weight 0, as a watcher saw it; the time
        # it takes is a bench target (bench/REPORT.md), here it is only reported.
        breached_at = reason.time.timestamp()
        zero_at = wait_for(
            lambda: scenario.recorder.first_time_at(0, after=breached_at - 0.001),
            timeout=10,
            what="the route to show weight 0 after the breach",
        )
        record_property(f"{breached}: breach to weight 0", f"{zero_at - breached_at:.3f}s")
        assert scenario.recorder.candidate_weights() == [0, 20, 0]


@contextmanager
def too_little_traffic(
    bed: LocalCluster, api_client: client.ApiClient, namespace: str, **deadlines: dict[str, str]
) -> Iterator[Scenario]:
    """A rollout at 10% whose candidate sees about 12 requests a minute, below minRequests (50)."""
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 10}, {"setWeight": 50}],
        prometheus=bed.prometheus_url,
        metrics=SEED_METRICS,
        interval="1s",
        min_requests=50,
        progress_deadlines=deadlines or None,
    )
    # 2 requests a second, 10% of them to the candidate.
    with serving(bed, api_client, namespace, Behaviour(), rps=2) as scenario:
        scenario.apply(manifest)
        yield scenario


def test_too_little_traffic_stays_inconclusive_and_is_not_promoted(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    with too_little_traffic(local_bed, api_client, namespace) as scenario:
        status = scenario.wait_for_status(
            "five analysis runs",
            lambda s: s.analysis and len(s.analysis[0].history) >= 5,
        )
        assert status.phase is Phase.PROGRESSING
        assert (status.current_step_index, status.current_weight) == (0, 10)
        for metric in status.analysis:
            assert {sample.verdict for sample in metric.history} == {Verdict.INCONCLUSIVE}
        # "no candidate requests in the window" until the first one, then "only N ...; minRequests is 50".
        assert "candidate requests in the window" in (status.analysis[0].message or "")
        assert scenario.recorder.candidate_weights() == [0, 10]


def test_inconclusive_past_its_deadline_rolls_back(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    deadline = {"after": "3s", "action": "rollback"}
    with too_little_traffic(local_bed, api_client, namespace, inconclusive=deadline) as scenario:
        final = scenario.wait_for_status("the end", lambda s: s.phase in FINISHED)
        assert final.phase is Phase.ROLLED_BACK, final.message
        assert final.rollback_reason is not None and final.rollback_reason.metric is None
        for metric in final.analysis:  # too little data, never a breach
            assert {sample.verdict for sample in metric.history} == {Verdict.INCONCLUSIVE}
        assert final.inconclusive_since is not None
        assert final.rollback_reason.time - final.inconclusive_since >= timedelta(seconds=3)
        assert scenario.recorder.weights_until(0) == [0, 10, 0]
