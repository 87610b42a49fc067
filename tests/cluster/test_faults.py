"""Short forms of the fault scenarios (tests/support/faults); bench/test_faults.py runs their long
forms, three times in a row. Prometheus outages are in test_rollout_prometheus_outage.py."""

from __future__ import annotations

import pytest
from kubernetes import client

from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from tests.support.faults.deletions import Removal, removed_mid_rollout
from tests.support.faults.kills import KillPlan, operator_kills
from tests.support.faults.outages import api_server_restart
from tests.support.faults.writers import second_writer

SHORT_KILLS = KillPlan(kills=3, seed=8, healthy=2, pause_seconds=3, max_gap=2)


def test_operator_sigkilled_at_random_moments_loses_nothing(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    report = operator_kills(local_bed, api_client, namespace, operator, SHORT_KILLS)
    print(report.as_dict())  # shown with -s
    assert report.kills == SHORT_KILLS.kills


@pytest.mark.usefixtures("operator")
def test_api_server_killed_mid_rollout_the_rollout_completes(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str
) -> None:
    # Each weight held 5 s: the route's recorder re-opens its watch after the restart, and on a loaded
    # machine (make test with the simulated rollouts) 3 s let the operator write 50 and 100 before it
    # did, so it missed 50.
    api_server_restart(local_bed, api_client, namespace, down_seconds=3, pause_seconds=5)


@pytest.mark.usefixtures("local_bed")
def test_a_second_writer_of_the_weights_is_answered_once_then_held(
    api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    second_writer(api_client, namespace, operator, writes_while_held=3)


@pytest.mark.usefixtures("local_bed")
@pytest.mark.parametrize("removal", list(Removal), ids=lambda r: r.name.lower())
def test_what_a_rollout_stands_on_removed_mid_rollout(
    api_client: client.ApiClient, namespace: str, operator: OperatorProcess, removal: Removal
) -> None:
    removed_mid_rollout(api_client, namespace, operator, removal, held_seconds=3)
