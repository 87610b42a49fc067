"""The evaluation gate on the bed: check Jobs run (as local processes standing in for their Pods,
testbed/check_pods.py) before any traffic moves, and their results decide a canary, a full release or
a rejection. Every check here is a team's own Job (testbed/check_script.py writes the result it is
given); the built-in evaluator's own tests are in test_gate_evaluator.py."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from kubernetes import client

from modelgate.api import ModelRolloutStatus, Phase, Verdict
from modelgate.api.gate_status import CheckState, GateDecision
from modelgate.core import ConditionType, Reason
from modelgate.kube.checks import CHECK_LABEL
from testbed.check_pods import CheckPods
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.gate import (
    POLICY,
    check_pods,
    decided_outside_the_cluster,
    ended,
    gate_result,
    gated_rollout,
    scenario,
    score,
    script_check,
)
from tests.support.scenario import Scenario

__all__ = ["check_pods", "scenario"]  # the fixtures


def assert_no_traffic_reached_the_candidate(scenario: Scenario) -> None:
    assert scenario.recorder.candidate_weights() == [0]
    assert scenario.traffic.driver.stats.sent["chat-v2"] == 0
    assert scenario.traffic.driver.stats.sent["chat-v1"] > 0


def checks_by_name(status: ModelRolloutStatus) -> dict[str, tuple[Verdict | None, str]]:
    assert status.gate is not None
    return {c.name: (c.verdict, c.message or "") for c in status.gate.checks}


def test_a_better_candidate_passes_as_a_canary_and_a_check_that_cannot_measure_follows_on_error(
    scenario: Scenario, namespace: str
) -> None:
    result = gate_result(score("math", 0.9, 0.8), score("coding", 0.82, 0.8))
    checks = [
        script_check("quality", result, policy=POLICY),
        script_check("flaky", exit_code=3, onError="Inconclusive"),
    ]
    scenario.apply(gated_rollout(namespace, checks, [{"setWeight": 50}], full={"allowed": True}))
    final = ended(scenario)
    assert final.phase is Phase.SUCCEEDED, final.message
    # A full release was allowed, but an Inconclusive check makes a canary at most: the steps ran.
    assert final.gate is not None and final.gate.decision is GateDecision.CANARY
    quality, flaky = final.gate.checks
    assert (quality.state, quality.verdict) == (CheckState.MEASURED, Verdict.PASS)
    assert {s.name: (s.verdict, s.max_drop) for s in quality.scores} == {
        "math": (Verdict.PASS, 0.05),
        "coding": (Verdict.PASS, 0.05),
    }
    assert quality.test_set is not None and quality.test_set.name == "qa"
    assert (flaky.state, flaky.verdict) == (CheckState.ERROR, Verdict.INCONCLUSIVE)
    assert "exited with code 3" in (flaky.message or "")
    # The steps ran only after the gate: 50, then all traffic.
    assert scenario.recorder.weights_until(100) == [0, 50, 100]


def test_a_regressed_capability_a_low_win_rate_bound_and_a_stale_set_each_reject_before_any_traffic(
    scenario: Scenario, namespace: str, check_pods: CheckPods, tmp_path: Path
) -> None:
    # Each check's candidate is better on average; each fails one rule of its policy.
    regressed = gate_result(
        score("math", 1.0, 0.8), score("coding", 0.7, 0.8)
    )  # coding: -0.1, tolerance 0.05
    judged = gate_result(score("math", 0.9, 0.8), win_rate=(55, 0, 45))  # share 0.55, bound about 0.45
    stale = gate_result(score("math", 0.9, 0.8), test_set_age=timedelta(days=45))
    checks = [
        script_check("quality", regressed, policy=POLICY),
        script_check("judge", judged, policy={**POLICY, "winRate": {"minLowerBound": 0.5}}),
        script_check("fresh-set", stale, policy=POLICY),
    ]
    rollout = gated_rollout(namespace, checks, [{"setWeight": 50}])
    scenario.apply(rollout)
    final = ended(scenario)
    assert final.phase is Phase.FAILED, final.message
    completed = next(c for c in final.conditions if c.type == ConditionType.COMPLETED)
    assert completed.reason == Reason.GATE_REJECTED
    assert final.gate is not None and final.gate.decision is GateDecision.REJECT
    quality, judge, fresh = final.gate.checks
    assert {s.name: s.verdict for s in quality.scores} == {"math": Verdict.PASS, "coding": Verdict.FAIL}
    assert quality.verdict is Verdict.FAIL
    assert judge.verdict is Verdict.FAIL and judge.win_rate is not None
    assert judge.win_rate.verdict is Verdict.FAIL and judge.win_rate.lower_bound < 0.5 < judge.win_rate.share
    assert all(s.verdict is Verdict.PASS for s in judge.scores)
    assert fresh.verdict is Verdict.FAIL and "stale" in (fresh.message or "")
    assert_no_traffic_reached_the_candidate(scenario)
    assert final.current_weight == 0
    # CI's `modelgate gate` rejects on the same results.
    assert decided_outside_the_cluster(rollout, check_pods, tmp_path / "ci") is GateDecision.REJECT


@pytest.mark.parametrize(
    ("samples", "decision"),
    [
        (50, GateDecision.FULL),  # every check passed, and a full release is allowed
        (5, GateDecision.CANARY),  # too few samples: Inconclusive, a canary at most
    ],
)
def test_modelgate_gate_in_ci_decides_as_the_operator_did_on_the_results_it_read(
    scenario: Scenario,
    namespace: str,
    check_pods: CheckPods,
    tmp_path: Path,
    samples: int,
    decision: GateDecision,
) -> None:
    result = gate_result(score("math", 0.9, 0.8, samples), score("coding", 0.82, 0.8, samples))
    checks = [script_check("quality", result, policy=POLICY), script_check("safety", result, policy=POLICY)]
    rollout = gated_rollout(namespace, checks, [{"setWeight": 50}], full={"allowed": True})
    scenario.apply(rollout)
    final = ended(scenario)
    assert final.gate is not None and final.gate.decision is decision, final.message
    assert decided_outside_the_cluster(rollout, check_pods, tmp_path / "ci") is decision


def test_bad_input_and_a_timeout_are_reported_and_no_traffic_moves(
    scenario: Scenario, namespace: str
) -> None:
    checks = [
        script_check("malformed", '{"scores": [{"name": "math", "candidate": 0.9}]}'),
        script_check("no-image", gate_result(), image="registry.invalid/quality-check:1"),
        {"name": "no-set", "evaluator": {"testSet": {"configMap": {"name": "qa-set", "key": "set.jsonl"}}}},
        script_check("hangs", hang=True, timeout="3s"),
    ]
    scenario.apply(gated_rollout(namespace, checks, [{"setWeight": 50}]))
    final = ended(scenario)
    assert final.phase is Phase.FAILED and final.gate is not None
    assert final.gate.decision is GateDecision.REJECT
    verdicts = checks_by_name(final)
    assert {verdict for verdict, _ in verdicts.values()} == {Verdict.FAIL}
    assert "scores[0].samples" in verdicts["malformed"][1]
    assert "ErrImagePull" in verdicts["no-image"][1] and "registry.invalid" in verdicts["no-image"][1]
    assert "spec.gate.checks[2].evaluator.testSet.configMap" in verdicts["no-set"][1]
    assert "not found" in verdicts["no-set"][1]
    assert "deadline" in verdicts["hangs"][1]
    assert_no_traffic_reached_the_candidate(scenario)


def test_a_check_that_ends_while_the_operator_is_down_is_read_not_run_again(
    scenario: Scenario,
    namespace: str,
    operator: OperatorProcess,
    api_client: client.ApiClient,
    tmp_path: Path,
) -> None:
    release = tmp_path / "measure-now"
    check = script_check("quality", gate_result(score("math", 0.9, 0.8)), wait_for=release, policy=POLICY)
    scenario.apply(gated_rollout(namespace, [check], [{"setWeight": 50}]))
    batch = client.BatchV1Api(api_client)

    def completed_jobs() -> list[str] | None:
        jobs = batch.list_namespaced_job(namespace, label_selector=CHECK_LABEL).items
        done = all(any(c.type == "Complete" for c in job.status.conditions or []) for job in jobs)
        return [job.metadata.uid for job in jobs] if jobs and done else None

    running = scenario.wait_for_status("the check to run", lambda s: "running" in (s.message or ""))
    assert running.gate is not None
    job = batch.list_namespaced_job(namespace, label_selector=CHECK_LABEL).items[0].metadata.uid
    operator.kill()
    release.touch()
    assert wait_for(completed_jobs, timeout=60, what="the check's Job to complete") == [job]
    operator.start()
    final = ended(scenario)
    assert final.phase is Phase.SUCCEEDED and final.gate is not None
    assert (final.gate.run, final.gate.started_at) == (running.gate.run, running.gate.started_at)
    assert final.gate.checks[0].verdict is Verdict.PASS
