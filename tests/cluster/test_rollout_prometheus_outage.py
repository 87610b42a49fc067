"""Prometheus stopped mid-rollout: by default the rollout pauses and nothing is promoted; with
`onPrometheusError: rollback` it rolls back after maxConsecutiveErrors failed runs. The scenarios are
in tests/support/faults/outages.py (bench/test_faults.py runs their long forms)."""

from __future__ import annotations

import pytest
from kubernetes import client

from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from tests.support.faults.outages import (
    PrometheusOutage,
    prometheus_outage_pauses,
    prometheus_outage_rolls_back,
)

SHORT = PrometheusOutage(max_consecutive_errors=2, failed_runs=4)
SHORT_ROLLBACK = PrometheusOutage(max_consecutive_errors=3, failed_runs=3)


@pytest.mark.usefixtures("prometheus_restarted")
def test_default_policy_pauses_promotes_nothing_and_resumes_on_command(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    prometheus_outage_pauses(local_bed, api_client, namespace, operator, SHORT)


@pytest.mark.usefixtures("prometheus_restarted", "operator")
def test_rollback_policy_rolls_back_after_max_consecutive_errors(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str
) -> None:
    prometheus_outage_rolls_back(local_bed, api_client, namespace, SHORT_ROLLBACK)
