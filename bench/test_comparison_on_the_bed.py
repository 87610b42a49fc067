"""A comparison with the incumbent through an incumbent-side error spike, on the bed: the candidate's
1% errors pass `compare.maxIncrease` while the incumbent fails 20% of its requests, and a fixed bound
on the same data, in dry run, fails, is shown, and decides nothing. In `make bench` (17-19 s of a
worker); `make test` judges comparisons on the bed in test_rollout_judgement.py and
test_simulated_rollbacks.py, and the engine's comparison and dry-run rules in unit tests."""

from __future__ import annotations

import pytest
from kubernetes import client

from modelgate.api import Phase, Verdict
from testbed.localcluster import LocalCluster
from testbed.manifests import model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.cluster.test_rollout_judgement import FINISHED, analysis_of, verdict_of
from tests.support.cli import modelgate
from tests.support.scenario import serving

pytestmark = pytest.mark.bench


def test_an_incumbent_error_spike_does_not_roll_back_a_healthy_candidate_under_a_comparison(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    compared = {"name": "errors", "preset": "errorRate", "compare": {"maxIncrease": 0.005}}
    # The same data against a fixed bound, in dry run: it fails, it is shown, it decides nothing.
    fixed = {"name": "errors-fixed", "preset": "errorRate", "max": 0.005, "dryRun": True}
    manifest = model_rollout(
        "chat",
        namespace,
        # Half the traffic brings the candidate's first errors soon; the pause holds it there, judged at
        # every interval, until the test promotes it.
        steps=[{"setWeight": 50}, {"pause": {}}],
        prometheus=local_bed.prometheus_url,
        metrics=[compared, fixed],
        interval="1s",
        # Judged on enough requests that the candidate's 1% shows as about 1%: at 20, the first window
        # after the weight moved held one error in 19 requests, above the 5% bound below.
        min_requests=500,
    )
    candidate, incumbent = Behaviour(error_rate=0.01), Behaviour(error_rate=0.2)
    with serving(local_bed, api_client, namespace, candidate, incumbent=incumbent, rps=100) as scenario:
        scenario.apply(manifest)
        # A 1% candidate can show no error in one window; wait for an evaluation that saw some, at the
        # pause: before it, the comparison may still wait for the incumbent's 500 requests.
        judged = scenario.wait_for_status(
            "the pause, with the fixed bound failing on candidate errors",
            lambda s: (
                s.phase is Phase.PAUSED
                and verdict_of(s, "errors-fixed") is Verdict.FAIL
                and (analysis_of(s, "errors").value or 0) > 0
            ),
        )
        errors = analysis_of(judged, "errors")
        assert errors.verdict is Verdict.PASS, errors.message
        assert errors.value is not None and errors.incumbent_value is not None
        assert 0 < errors.value < 0.05 < 0.1 < errors.incumbent_value

        promoted = modelgate(operator.kubeconfig, "promote", "chat", "-n", namespace)
        assert promoted.returncode == 0, promoted.stdout + promoted.stderr
        final = scenario.wait_for_status("the end", lambda s: s.phase in FINISHED)
        assert final.phase is Phase.SUCCEEDED, final.message
        assert final.rollback_reason is None
        assert scenario.recorder.weights_until(100) == [0, 50, 100]
