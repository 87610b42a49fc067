"""Judging against the incumbent on the bed (real API server, real Prometheus, doubles, the operator as
a process): the sequential test, a comparison through an incumbent-side outage, dry runs, and the
deadline of rollouts stuck Pending (the Inconclusive one is in test_rollout_rollback.py)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from kubernetes import client

from modelgate.api import ModelRolloutStatus, Phase, Verdict
from testbed.localcluster import LocalCluster
from testbed.manifests import http_route, model_deployment, model_rollout, model_service
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.cli import modelgate
from tests.support.kube import create
from tests.support.scenario import Rollouts, serving

FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)
ALPHA = 0.05


def test_the_sequential_test_rolls_back_3_percent_errors_against_1_percent_at_10_percent_traffic(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    record_property: Any,
) -> None:
    tested = {"name": "errors", "preset": "errorRate", "sequential": {"alpha": ALPHA}}
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 10}, {"pause": {}}],  # 10% until a promote that never comes
        prometheus=local_bed.prometheus_url,
        metrics=[tested],  # no fixed bound: only the sequential test can roll back
        interval="2s",
    )
    candidate, incumbent = Behaviour(error_rate=0.03), Behaviour(error_rate=0.01)
    with serving(local_bed, api_client, namespace, candidate, incumbent=incumbent, rps=200) as scenario:
        scenario.apply(manifest)
        final = scenario.wait_for_status("a rollback", lambda s: s.phase in FINISHED, timeout=150)
        assert final.phase is Phase.ROLLED_BACK, final.message
        reason = final.rollback_reason
        assert reason is not None and reason.metric == "errors"
        assert "sequential test" in reason.message
        (record,) = final.analysis
        evidence = record.sequential
        assert record.verdict is Verdict.FAIL and evidence is not None
        assert evidence.log_evidence >= math.log(1 / ALPHA)
        # What the test counted: about 10% of the requests, and a higher error share on the candidate.
        share = evidence.candidate_requests / (evidence.candidate_requests + evidence.incumbent_requests)
        assert 0.05 < share < 0.2, share
        candidate_rate = evidence.candidate_events / evidence.candidate_requests
        incumbent_rate = evidence.incumbent_events / evidence.incumbent_requests
        assert candidate_rate > incumbent_rate
        # Differences of counters' totals: whole requests and events, none extrapolated or doubled.
        counted = (
            evidence.candidate_events,
            evidence.candidate_requests,
            evidence.incumbent_events,
            evidence.incumbent_requests,
        )
        assert all(n.is_integer() for n in counted), counted
        assert scenario.recorder.weights_until(0) == [0, 10, 0]

        at_10 = scenario.recorder.first_time_at(10, after=0)
        assert at_10 is not None
        took = reason.time.timestamp() - at_10
        measured = (
            f"{took:.1f}s from weight 10 to the rollback; candidate {evidence.candidate_events:.0f} errors"
            f" / {evidence.candidate_requests:.0f} requests ({candidate_rate:.2%}), incumbent"
            f" {evidence.incumbent_events:.0f} / {evidence.incumbent_requests:.0f} ({incumbent_rate:.2%}),"
            f" evidence {math.exp(evidence.log_evidence):.1f} >= 1/alpha = {1 / ALPHA:.0f}"
        )
        record_property("sequential test, 3% vs 1% at 10% traffic, 200 req/s", measured)


def test_an_incumbent_error_spike_does_not_roll_back_a_healthy_candidate_under_a_comparison(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    compared = {"name": "errors", "preset": "errorRate", "compare": {"maxIncrease": 0.005}}
    # The same data against a fixed bound, in dry run: it fails, it is shown, it decides nothing.
    fixed = {"name": "errors-fixed", "preset": "errorRate", "max": 0.005, "dryRun": True}
    manifest = model_rollout(
        "chat",
        namespace,
        # Half the traffic brings the candidate's first errors soon; the pause holds it there, judged at
        # every interval, until the test promotes it.
        steps=[{"setWeight": 50}, {"pause": {}}],
        prometheus=local_bed.prometheus_url,
        metrics=[compared, fixed],
        interval="1s",
    )
    candidate, incumbent = Behaviour(error_rate=0.01), Behaviour(error_rate=0.2)
    with serving(local_bed, api_client, namespace, candidate, incumbent=incumbent, rps=100) as scenario:
        scenario.apply(manifest)
        judged = scenario.wait_for_status(
            "the fixed bound to fail", lambda s: _verdict(s, "errors-fixed") is Verdict.FAIL
        )
        assert judged.phase is Phase.PAUSED
        errors = next(m for m in judged.analysis if m.name == "errors")
        assert errors.verdict is Verdict.PASS, errors.message
        assert errors.value is not None and errors.incumbent_value is not None
        assert 0 < errors.value < 0.05 < 0.1 < errors.incumbent_value

        promoted = modelgate(operator.kubeconfig, "promote", "chat", "-n", namespace)
        assert promoted.returncode == 0, promoted.stdout + promoted.stderr
        final = scenario.wait_for_status("the end", lambda s: s.phase in FINISHED)
        assert final.phase is Phase.SUCCEEDED, final.message
        assert final.rollback_reason is None
        assert scenario.recorder.weights_until(100) == [0, 50, 100]


def _verdict(status: ModelRolloutStatus, metric: str) -> Verdict | None:
    return next((m.verdict for m in status.analysis if m.name == metric), None)


def _serving_without_an_available_candidate(api_client: client.ApiClient, namespace: str) -> None:
    """chat-v1 and chat-v2 behind HTTPRoute `chat`; chat-v2's Pods can never be scheduled."""
    candidate = model_deployment("chat-v2", namespace)
    candidate["spec"]["template"]["spec"]["nodeSelector"] = {"modelgate.io/gpu": "none"}
    for manifest in (
        model_deployment("chat-v1", namespace),
        candidate,
        model_service("chat-v1", namespace),
        model_service("chat-v2", namespace),
        http_route("chat", namespace, {"chat-v1": 100, "chat-v2": 0}),
    ):
        create(api_client, manifest)


def _deadline_events(api_client: client.ApiClient, namespace: str) -> list[str]:
    events = client.CoreV1Api(api_client).list_namespaced_event(namespace).items
    return [e.message or "" for e in events if e.reason == "ProgressDeadlineExceeded"]


def _condition_reason(status: ModelRolloutStatus, type_: str) -> str | None:
    return next((c.reason for c in status.conditions if c.type == type_), None)


def _pending_with_deadline(api_client: client.ApiClient, namespace: str, action: str) -> Rollouts:
    _serving_without_an_available_candidate(api_client, namespace)
    rollouts = Rollouts(api_client, namespace)
    rollouts.apply(
        model_rollout(
            "chat",
            namespace,
            steps=[{"setWeight": 20}],
            progress_deadlines={"pending": {"after": "2s", "action": action}},
        )
    )
    return rollouts


@pytest.mark.parametrize(("action", "phase"), [("rollback", Phase.ROLLED_BACK), ("fail", Phase.FAILED)])
def test_a_rollout_pending_past_its_deadline_rolls_back_or_fails_as_configured(
    api_client: client.ApiClient, namespace: str, operator: OperatorProcess, action: str, phase: Phase
) -> None:
    rollouts = _pending_with_deadline(api_client, namespace, action)
    ended = rollouts.wait_for_status(str(phase), lambda s: s.phase in FINISHED, timeout=30)
    assert ended.phase is phase, ended.message
    assert (ended.current_weight, ended.live_weight) == (0, 0)  # the candidate never got traffic
    assert _condition_reason(ended, "CandidateAvailable") == "NotAvailable"
    if action == "rollback":
        assert ended.rollback_reason is not None and ended.rollback_reason.metric is None
        assert _condition_reason(ended, "Completed") == "RolledBack"
    else:
        wait_for(lambda: _deadline_events(api_client, namespace), timeout=10, what="the deadline's Event")


def test_a_rollout_pending_past_its_deadline_pauses_until_resume(
    api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    rollouts = _pending_with_deadline(api_client, namespace, "pause")
    rollouts.wait_for_status(
        "the deadline's pause",
        lambda s: _condition_reason(s, "AnalysisHealthy") == "ProgressDeadlineExceeded",
        timeout=30,
    )
    wait_for(lambda: _deadline_events(api_client, namespace), timeout=10, what="the deadline's Event")
    # The candidate becomes Available: the rollout sees it, and still holds.
    apps = client.AppsV1Api(api_client)
    apps.patch_namespaced_deployment(
        "chat-v2", namespace, {"spec": {"template": {"spec": {"nodeSelector": None}}}}
    )
    held = rollouts.wait_for_status(
        "the candidate seen Available", lambda s: _condition_reason(s, "CandidateAvailable") == "Available"
    )
    assert (held.phase, held.current_weight) == (Phase.PENDING, 0)
    assert "resume" in (held.message or "")

    resumed = modelgate(operator.kubeconfig, "resume", "chat", "-n", namespace)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    done = rollouts.wait_for_status("success after resume", lambda s: s.phase is Phase.SUCCEEDED)
    assert done.current_weight == 100
