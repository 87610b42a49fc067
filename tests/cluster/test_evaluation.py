"""ModelEvaluation on the bed: runs on demand (the run-now annotation and `modelgate evaluate-now`)
pass; once the served double degrades one capability the next run sets Regressed, posts the Event
and exports the metric the chart's alert rule fires on in the bed's Prometheus; a missing test set
is a failed run naming the field; a malformed schedule is refused at admission. The real 1-minute
schedule is bench/test_evaluation_schedule.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from modelgate.api.evaluation_status import RunOutcome, RunReason
from modelgate.api.statusmodel import Verdict
from modelgate.metrics.prometheus_http import PrometheusClient
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.cli import modelgate
from tests.support.clusters import TestCluster
from tests.support.evaluations import SERVED, Evaluations, evaluator_check, model_evaluation, served_model
from tests.support.gate import ITEMS, knowing
from tests.support.kube import create


def condition(evaluations: Evaluations, type_: str) -> tuple[str, str] | None:
    found = next((c for c in evaluations.status().conditions if c.type == type_), None)
    return None if found is None else (found.status, found.reason)


def warning_reasons(api_client: client.ApiClient, namespace: str, name: str) -> list[str]:
    events: Any = client.EventsV1Api(api_client).list_namespaced_event(
        namespace, field_selector=f"regarding.name={name},regarding.kind=ModelEvaluation"
    )
    return [event.reason for event in events.items if event.type == "Warning"]


def test_runs_pass_until_a_capability_degrades_then_regressed_events_and_the_alert_fire(
    local_bed: LocalCluster,
    cluster: TestCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    operator_scraped: PrometheusClient,
    tmp_path: Path,
) -> None:
    evaluations = Evaluations(api_client, namespace)
    with served_model(local_bed, api_client, namespace, tmp_path) as (fleet, test_set):
        create(api_client, model_evaluation(namespace))
        ran = modelgate(cluster.kubeconfig, "evaluate-now", evaluations.name, "-n", namespace)
        assert ran.returncode == 0, ran.stderr
        first = evaluations.wait_for_runs(1)
        assert first.outcome is RunOutcome.PASSED, first.message
        # The first run is the baseline of the next ones.
        evaluations.patch({"spec": {"baseline": {"run": {"id": first.id}}}})
        for n in (2, 3):
            evaluations.run_now(f"run-{n}")
            run = evaluations.wait_for_runs(n)
            assert run.outcome is RunOutcome.PASSED, run.message
        scores = {s.name: (s.value, s.baseline, s.samples) for s in run.checks[0].scores}
        assert scores == {"math": (0.8, 0.8, ITEMS), "recall": (0.8, 0.8, ITEMS)}
        assert run.test_set is not None and run.test_set.name == "qa"
        assert condition(evaluations, "Regressed") == ("False", "NotRegressed")
        assert "Regressed" not in warning_reasons(api_client, namespace, evaluations.name)

        fleet.set_behaviour(SERVED, knowing(test_set, {"math": 0.6, "recall": 0.8}))
        evaluations.run_now("run-4")
        regressed = evaluations.wait_for_runs(4)
        assert (regressed.outcome, regressed.reason) == (RunOutcome.REGRESSED, RunReason.BELOW_POLICY)
        verdicts = {s.name: s.verdict for s in regressed.checks[0].scores}
        assert verdicts == {"math": Verdict.FAIL, "recall": Verdict.PASS}
        assert condition(evaluations, "Regressed") == ("True", "Regressed")
        wait_for(
            lambda: "Regressed" in warning_reasons(api_client, namespace, evaluations.name),
            timeout=10,
            what="the Regressed Event",
        )
        alert = (
            f'ALERTS{{alertname="ModelEvaluationRegressed",alertstate="firing",namespace="{namespace}",'
            f'evaluation="{evaluations.name}",check="quality"}}'
        )
        wait_for(lambda: operator_scraped.query(alert).value == 1, timeout=20, what="the alert to fire")
        trend = modelgate(cluster.kubeconfig, "evaluations", "-n", namespace)
        assert trend.returncode == 0 and max(len(line) for line in trend.stdout.splitlines()) <= 80
        assert "0.600*" in trend.stdout, trend.stdout


def test_a_missing_test_set_fails_the_run_naming_the_field(
    api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    evaluations = Evaluations(api_client, namespace)
    create(api_client, model_evaluation(namespace, checks=[evaluator_check("absent")]))
    evaluations.run_now("1")
    run = evaluations.wait_for_runs(1, timeout=20)
    assert (run.outcome, run.reason) == (RunOutcome.FAILED, RunReason.CHECK_ERROR)
    error = run.checks[0].error or ""
    assert "spec.checks[0].evaluator.testSet.configMap" in error and "absent" in error, error
    assert condition(evaluations, "Regressed") == ("False", "NoRunYet")


@pytest.mark.parametrize("schedule", ["61 * * * *", "* * * *", "*/5 * * * mon", "@often", "1,,2 * * * *"])
def test_a_malformed_schedule_is_refused_at_admission_naming_the_field(
    api_client: client.ApiClient, namespace: str, schedule: str
) -> None:
    with pytest.raises(ApiException) as refused:
        create(api_client, model_evaluation(namespace, schedule=schedule))
    assert refused.value.status == 422, refused.value.body
    causes = json.loads(refused.value.body or "{}").get("details", {}).get("causes", [])
    assert any(c.get("field") == "spec.schedule" and "cron" in c.get("message", "") for c in causes), causes


def test_a_tokens_ratio_is_refused_at_admission_where_no_two_models_are_compared(
    api_client: client.ApiClient, namespace: str
) -> None:
    check = {**evaluator_check(), "policy": {"maxTokensRatio": 1.5}}
    with pytest.raises(ApiException) as refused:
        create(api_client, model_evaluation(namespace, checks=[check]))
    assert refused.value.status == 422, refused.value.body
    causes = json.loads(refused.value.body or "{}").get("details", {}).get("causes", [])
    assert any(c.get("field") == "spec.checks" and "maxTokensRatio" in c.get("message", "") for c in causes)


def test_a_well_formed_evaluation_is_accepted(api_client: client.ApiClient, namespace: str) -> None:
    for n, schedule in enumerate(["@hourly", "*/5 9-17 * * 1-5", "0 0 1,15 * *"]):
        create(api_client, model_evaluation(namespace, name=f"ok-{n}", schedule=schedule))
