"""Prometheus stopped mid-rollout: by default the rollout pauses and nothing is promoted; with
`onPrometheusError: rollback` it rolls back after maxConsecutiveErrors failed runs. The scenarios are
in tests/support/faults/outages.py (bench/test_faults.py runs their long forms)."""

from __future__ import annotations

import pytest
from kubernetes import client

from modelgate.api import Phase
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.cli import modelgate
from tests.support.faults.outages import (
    PrometheusOutage,
    prometheus_outage_pauses,
    prometheus_outage_rolls_back,
)
from tests.support.scenario import serving

SHORT = PrometheusOutage(max_consecutive_errors=2, failed_runs=6)
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


def test_missing_token_secret_pauses_like_an_outage_and_resumes_once_it_exists(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 20}, {"setWeight": 100}],
        prometheus=local_bed.prometheus_url,
        metrics=SEED_METRICS,
        interval="1s",
        rollback={"maxConsecutiveErrors": 2},
    )
    manifest["spec"]["analysis"]["prometheus"]["bearerTokenSecretRef"] = {
        "name": "prom-token",
        "key": "token",
    }
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)
        paused = scenario.wait_for_status("the rollout to pause", lambda s: s.phase is Phase.PAUSED)
        error = paused.analysis[0].message or ""
        assert "cannot read the Prometheus token" in error and "prom-token" in error, error
        assert paused.current_weight == 20

        secret = client.V1Secret(
            metadata=client.V1ObjectMeta(name="prom-token"), string_data={"token": "t0ken"}
        )
        client.CoreV1Api(api_client).create_namespaced_secret(namespace, secret)
        resumed = modelgate(operator.kubeconfig, "resume", "chat", "-n", namespace)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        scenario.wait_for_status("success once the token is readable", lambda s: s.phase is Phase.SUCCEEDED)
