"""Long forms of the fault scenarios (tests/support/faults), each three times in a row in one run of
`make bench`; the short forms run in `make test` (tests/cluster/test_faults.py and
test_rollout_prometheus_outage.py). Each round's numbers go to bench/results/faults-*.json."""

from __future__ import annotations

import dataclasses

import pytest
from kubernetes import client

from bench.report import record
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from tests.support.faults.deletions import Removal, removed_mid_rollout
from tests.support.faults.kills import KillPlan, operator_kills
from tests.support.faults.outages import (
    PrometheusOutage,
    api_server_restart,
    prometheus_outage_pauses,
    prometheus_outage_rolls_back,
)
from tests.support.faults.writers import second_writer

pytestmark = pytest.mark.bench
ROUNDS = pytest.mark.parametrize("round_", [1, 2, 3], ids=lambda n: f"round{n}")
LONG_KILLS = KillPlan(kills=100, seed=8, healthy=4, pause_seconds=8, max_gap=3)
LONG_OUTAGE = PrometheusOutage(max_consecutive_errors=5, failed_runs=30)


@ROUNDS
@pytest.mark.timeout(3600)
def test_operator_sigkilled_100_times(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    round_: int,
) -> None:
    plan = dataclasses.replace(LONG_KILLS, seed=LONG_KILLS.seed + round_)
    report = operator_kills(local_bed, api_client, namespace, operator, plan)
    record(f"faults-kills-round{round_}", report.as_dict())
    assert report.kills == plan.kills


@ROUNDS
@pytest.mark.timeout(600)
@pytest.mark.usefixtures("operator")
def test_api_server_killed_for_20s(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, round_: int
) -> None:
    measured = api_server_restart(local_bed, api_client, namespace, down_seconds=20, pause_seconds=8)
    record(f"faults-api-server-round{round_}", measured)


@ROUNDS
@pytest.mark.timeout(600)
@pytest.mark.usefixtures("prometheus_restarted")
def test_prometheus_down_for_30_runs_pauses(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    round_: int,
) -> None:
    measured = prometheus_outage_pauses(local_bed, api_client, namespace, operator, LONG_OUTAGE)
    record(f"faults-prometheus-pause-round{round_}", measured)


@ROUNDS
@pytest.mark.timeout(600)
@pytest.mark.usefixtures("prometheus_restarted", "operator")
def test_prometheus_down_rolls_back_by_policy(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, round_: int
) -> None:
    measured = prometheus_outage_rolls_back(local_bed, api_client, namespace, LONG_OUTAGE)
    record(f"faults-prometheus-rollback-round{round_}", measured)


@ROUNDS
@pytest.mark.timeout(600)
@pytest.mark.usefixtures("local_bed")
def test_a_second_writer_for_30_writes(
    api_client: client.ApiClient, namespace: str, operator: OperatorProcess, round_: int
) -> None:
    measured = second_writer(api_client, namespace, operator, writes_while_held=30)
    record(f"faults-second-writer-round{round_}", measured)


@ROUNDS
@pytest.mark.timeout(600)
@pytest.mark.usefixtures("local_bed")
@pytest.mark.parametrize("removal", list(Removal), ids=lambda r: r.name.lower())
def test_removed_for_30s(
    api_client: client.ApiClient, namespace: str, operator: OperatorProcess, removal: Removal, round_: int
) -> None:
    measured = removed_mid_rollout(api_client, namespace, operator, removal, held_seconds=30)
    record(f"faults-{removal.name.lower()}-round{round_}", measured)
