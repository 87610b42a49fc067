"""The tick faults of issue 34 at the stages `make test` leaves out (tests/cluster/test_tick_faults.py
injects into decide): an exception in observe, and in apply, at 50% returns the route to the
incumbent within three analysis intervals (tests/support/faults/ticks.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client

from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from tests.support.faults.ticks import fault_file, fault_returns_the_traffic, faulty_operator

pytestmark = pytest.mark.bench
__all__ = ["fault_file", "faulty_operator"]  # the fixtures


@pytest.mark.parametrize("stage", ["observe", "apply"])
def test_an_exception_in_observe_or_apply_at_50_returns_the_traffic_within_three_intervals(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    faulty_operator: OperatorProcess,
    fault_file: Path,
    stage: str,
    record_property: pytest.RecordProperty,
) -> None:
    fault_returns_the_traffic(local_bed, api_client, namespace, fault_file, stage, record_property)
