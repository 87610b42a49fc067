"""The built-in evaluator rejecting a candidate on the bed: the same path as
tests/cluster/test_gate_evaluator.py, whose passing case `make test` runs; the rejection's own path is
in make test with a custom check (tests/cluster/test_gate.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client

from modelgate.api import Phase, Verdict
from modelgate.api.gate_status import GateDecision
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from tests.cluster.test_gate_evaluator import ended, evaluated

pytestmark = pytest.mark.bench


def test_the_evaluator_rejects_a_candidate_that_regressed_one_capability_before_it_gets_traffic(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    # Better on average (0.84 against 0.8), but recall falls by 0.12, past the tolerance 0.05.
    regressed = {"math": 1.0, "recall": 0.68}
    with evaluated(local_bed, api_client, namespace, tmp_path, regressed) as scenario:
        final = ended(scenario)
        assert final.phase is Phase.FAILED and final.gate is not None
        assert final.gate.decision is GateDecision.REJECT
        verdicts = {s.name: s.verdict for s in final.gate.checks[0].scores}
        assert verdicts == {"math": Verdict.PASS, "recall": Verdict.FAIL}
        assert scenario.recorder.candidate_weights() == [0]
        assert scenario.traffic.driver.stats.sent["chat-v2"] == 0
