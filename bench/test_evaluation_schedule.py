"""A ModelEvaluation on a real 1-minute schedule (about 4 minutes): three scheduled runs pass; the
served double then degrades one capability, and the next scheduled run sets Regressed, posts the
Event and the chart's alert fires in the bed's Prometheus. tests/cluster/test_evaluation.py is the
same with on-demand runs, in the timed suite."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client

from modelgate.api.evaluation_status import RunOutcome, RunReason
from modelgate.metrics.prometheus_http import PrometheusClient
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.cluster.test_evaluation import condition, warning_reasons
from tests.support.evaluations import SERVED, Evaluations, model_evaluation, served_model
from tests.support.gate import knowing
from tests.support.kube import create

# Up to a minute to the first fire, three more for the other runs, and the runs themselves.
pytestmark = [pytest.mark.bench, pytest.mark.timeout(480)]
A_MINUTE_AND_A_RUN = 90.0


def test_three_scheduled_runs_pass_then_a_degraded_capability_regresses_and_alerts(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    operator_scraped: PrometheusClient,
    tmp_path: Path,
) -> None:
    evaluations = Evaluations(api_client, namespace)
    with served_model(local_bed, api_client, namespace, tmp_path) as (fleet, test_set):
        # No baseline but the policy's minimum: the first scheduled run is the one every later one
        # meets, as a baseline `run` would pin.
        manifest = model_evaluation(namespace, schedule="* * * * *")
        manifest["spec"]["checks"][0]["policy"]["minScore"] = 0.75
        create(api_client, manifest)
        for n in (1, 2, 3):
            run = evaluations.wait_for_runs(n, timeout=A_MINUTE_AND_A_RUN)
            assert (run.outcome, run.on_demand) == (RunOutcome.PASSED, False), run.message
        fleet.set_behaviour(SERVED, knowing(test_set, {"math": 0.6, "recall": 0.8}))
        regressed = evaluations.wait_for_runs(4, timeout=A_MINUTE_AND_A_RUN)
        assert (regressed.outcome, regressed.reason) == (RunOutcome.REGRESSED, RunReason.BELOW_POLICY)
        assert condition(evaluations, "Regressed") == ("True", "Regressed")
        assert "Regressed" in warning_reasons(api_client, namespace, evaluations.name)
        alert = (
            f'ALERTS{{alertname="ModelEvaluationRegressed",alertstate="firing",namespace="{namespace}",'
            f'evaluation="{evaluations.name}"}}'
        )
        wait_for(lambda: operator_scraped.query(alert).value == 1, timeout=20, what="the alert to fire")
