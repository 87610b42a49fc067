"""The short form of the operator killed at random moments; bench/test_faults.py runs the long forms
of every fault scenario (tests/support/faults: the operator killed, the API server killed, a second
writer of the weights, what a rollout stands on removed), three times in a row. Prometheus outages
are in test_rollout_prometheus_outage.py."""

from __future__ import annotations

from kubernetes import client

from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from tests.support.faults.kills import KillPlan, operator_kills

SHORT_KILLS = KillPlan(kills=3, seed=8, healthy=2, pause_seconds=3, max_gap=2)


def test_operator_sigkilled_at_random_moments_loses_nothing(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    report = operator_kills(local_bed, api_client, namespace, operator, SHORT_KILLS)
    print(report.as_dict())  # shown with -s
    assert report.kills == SHORT_KILLS.kills
