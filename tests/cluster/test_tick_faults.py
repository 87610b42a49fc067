"""A tick never fails with traffic on the candidate (issue 34): an exception injected into a tick's
decide stage at 50% returns the route to the incumbent within three analysis intervals
(tests/support/faults/ticks.py says what is checked); bench/test_tick_faults.py injects into observe
and apply."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client

from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from tests.support.faults.ticks import fault_file, fault_returns_the_traffic, faulty_operator

__all__ = ["fault_file", "faulty_operator"]  # the fixtures


def test_an_exception_in_a_tick_at_50_returns_the_traffic_within_three_intervals_and_fails_naming_it(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    faulty_operator: OperatorProcess,
    fault_file: Path,
    record_property: pytest.RecordProperty,
) -> None:
    fault_returns_the_traffic(local_bed, api_client, namespace, fault_file, "decide", record_property)
