"""Judging against the incumbent on the bed (real API server, real Prometheus, doubles, the operator as
a process): the sequential test, ratios of TTFT and time per token that judge what end-to-end latency
cannot, and the deadline of rollouts stuck Pending (the Inconclusive one is in
test_rollout_rollback.py). A comparison through an incumbent-side error spike, with a dry-run rule
beside it, is in bench/test_comparison_on_the_bed.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kubernetes import client

from modelgate.api import BreachRule, MetricAnalysis, ModelRolloutStatus, Phase, Verdict
from testbed.localcluster import LocalCluster
from testbed.manifests import http_route, model_deployment, model_rollout, model_service
from testbed.model_server_double import Behaviour, Latency
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.cli import modelgate
from tests.support.kube import create
from tests.support.scenario import Rollouts, Scenario, serving

FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)
ALPHA = 0.05


def test_a_candidate_with_twice_the_ttft_is_rolled_back_by_a_ratio_while_its_latency_passes(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    record_property: Any,
) -> None:
    ttft = {"name": "ttft", "preset": "ttftP99", "compare": {"maxRatio": 1.5}}
    # Gating, not a dry run: it could roll back too, and passes at the evaluation that does.
    latency = {"name": "latency", "preset": "latencyP99", "max": 1.0}
    metrics = [ttft, latency]
    # TTFT 0.2s and 0.4s fall in vLLM's buckets (0.1, 0.25] and (0.25, 0.5]; end to end, 0.2 + 19 x
    # 0.02 = 0.58s and 0.4 + 19 x 0.02 = 0.78s both fall in (0.5, 0.8], under the bound of 1s.
    incumbent = Behaviour(latency=Latency(ttft=0.2, tpot=0.02), output_tokens=20)
    candidate = Behaviour(latency=Latency(ttft=0.4, tpot=0.02), output_tokens=20)
    steps = [{"setWeight": 50}, {"pause": {}}]  # held at 50% until a rollback
    with _run_to_the_end(local_bed, api_client, namespace, steps, metrics, candidate, incumbent) as run:
        scenario, final, took = run
        assert final.phase is Phase.ROLLED_BACK, final.message
        assert final.rollback_reason is not None and final.rollback_reason.metric == "ttft"
        judged_ttft, judged_latency = analysis_of(final, "ttft"), analysis_of(final, "latency")
        assert judged_ttft.verdict is Verdict.FAIL, judged_ttft.message
        assert judged_ttft.value is not None and judged_ttft.incumbent_value is not None
        ratio = judged_ttft.value / judged_ttft.incumbent_value
        assert 1.8 < ratio < 2.2, (judged_ttft.value, judged_ttft.incumbent_value)
        # The effective bound is a number in status: 1.5 x the incumbent's value of that evaluation.
        reason = final.rollback_reason
        assert reason.rule is BreachRule.MAX_RATIO and reason.incumbent_value is not None
        assert reason.threshold == pytest.approx(1.5 * reason.incumbent_value)
        assert judged_latency.verdict is Verdict.PASS, judged_latency.message
        assert judged_latency.value is not None and judged_latency.value < 1.0
        assert scenario.recorder.weights_until(0) == [0, 50, 0]
        record_property(
            "TTFT 2x rolled back by maxRatio 1.5",
            f"{took:.1f}s from apply to RolledBack; TTFT P99 {judged_ttft.value:.3f}s vs"
            f" {judged_ttft.incumbent_value:.3f}s (x{ratio:.2f}); latency P99 {judged_latency.value:.3f}s"
            " <= 1s Pass",
        )


def test_a_candidate_with_longer_answers_but_equal_ttft_and_tpot_is_promoted(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    record_property: Any,
) -> None:
    compared = {"compare": {"maxRatio": 1.2}}
    metrics = [
        {"name": "ttft", "preset": "ttftP99", **compared},
        {"name": "tpot", "preset": "tpotP99", **compared},
        # What end-to-end latency would have said: shown, deciding nothing.
        {"name": "latency", "preset": "latencyP99", **compared, "dryRun": True},
    ]
    # Three times the tokens (under the traffic's max_tokens of 32) at the same TTFT and time per token:
    # end to end 0.2 + 9 x 0.04 = 0.56s against 0.2 + 29 x 0.04 = 1.36s, in vLLM's buckets (0.5, 0.8]
    # and (1.0, 1.5]; TTFT in (0.1, 0.25] and time per token in (0.025, 0.05] on both sides.
    timing = Latency(ttft=0.2, tpot=0.04)
    incumbent = Behaviour(latency=timing, output_tokens=10)
    candidate = Behaviour(latency=timing, output_tokens=30)
    steps = [{"setWeight": 50}]
    with _run_to_the_end(local_bed, api_client, namespace, steps, metrics, candidate, incumbent) as run:
        scenario, final, took = run
        assert final.phase is Phase.SUCCEEDED, final.message
        assert final.rollback_reason is None
        for name in ("ttft", "tpot"):
            judged = analysis_of(final, name)
            assert judged.verdict is Verdict.PASS, judged.message
            assert judged.value is not None and judged.value == pytest.approx(judged.incumbent_value)
        latency = analysis_of(final, "latency")
        assert latency.verdict is Verdict.FAIL, latency.message
        assert latency.value is not None and latency.incumbent_value is not None
        assert latency.value > 1.5 * latency.incumbent_value
        assert scenario.recorder.weights_until(100) == [0, 50, 100]
        record_property(
            "3x longer answers, equal TTFT and TPOT, promoted",
            f"{took:.1f}s from apply to Succeeded; latency P99 {latency.value:.3f}s vs"
            f" {latency.incumbent_value:.3f}s (dry run Fail)",
        )


@contextmanager
def _run_to_the_end(
    bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    steps: list[dict[str, Any]],
    metrics: list[dict[str, Any]],
    candidate: Behaviour,
    incumbent: Behaviour,
) -> Iterator[tuple[Scenario, ModelRolloutStatus, float]]:
    """A rollout judged every second at 100 requests a second, run until it ends: the scenario (still
    serving), the final status and the seconds from its creation to its end."""
    manifest = model_rollout(
        "chat", namespace, steps=steps, prometheus=bed.prometheus_url, metrics=metrics, interval="1s"
    )
    with serving(bed, api_client, namespace, candidate, incumbent=incumbent, rps=100) as scenario:
        started = time.monotonic()
        scenario.apply(manifest)
        final = scenario.wait_for_status("the end", lambda s: s.phase in FINISHED)
        yield scenario, final, time.monotonic() - started


def analysis_of(status: ModelRolloutStatus, metric: str) -> MetricAnalysis:
    return next(m for m in status.analysis if m.name == metric)


def verdict_of(status: ModelRolloutStatus, metric: str) -> Verdict | None:
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
