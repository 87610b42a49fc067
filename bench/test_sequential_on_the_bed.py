"""The sequential test on the bed (moved out of `make test` for their 45 s; the seeded simulations
of tests/unit prove its error rates): it rolls back 3% errors against 1% at 10% of the traffic, and
passes on evidence: a sequential test with a non-inferiority margin promotes an A/A
candidate only once its confidence sequence lies below the margin; until then the step waits,
Inconclusive, with the progress deadline bounding the wait (issue 22).

Traffic chosen so it ends well within a minute (tooling/sequential_sim.py, 2,000 simulated runs):
200 requests/s, a 50% step, a 10% error rate on both sides and a margin of 1.5 at a 2 s interval pass
after 6 intervals at the median and 13 at the 90th percentile (12 s and 26 s of counts)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from kubernetes import client

from modelgate.api import MetricAnalysis, Phase, Verdict
from testbed.localcluster import LocalCluster
from testbed.manifests import model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.scenario import serving

ALPHA = 0.05
MARGIN = 1.5
FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED, Phase.PAUSED)
ENDED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)

pytestmark = pytest.mark.bench


def test_an_a_a_candidate_is_promoted_only_once_its_confidence_sequence_lies_below_the_margin(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    tested = {"name": "errors", "preset": "errorRate", "sequential": {"alpha": ALPHA, "margin": MARGIN}}
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 50}],
        prometheus=local_bed.prometheus_url,
        metrics=[tested],
        interval="2s",
        progress_deadlines={"inconclusive": {"after": "2m", "action": "pause"}},
    )
    same = Behaviour(error_rate=0.10)
    with serving(local_bed, api_client, namespace, same, incumbent=same, rps=200) as scenario:
        scenario.apply(manifest)
        waited = scenario.wait_for_status(
            "the step waiting on its evidence",
            lambda s: s.phase in FINISHED or any(_waiting_on_counts(m) for m in s.analysis),
            timeout=40,
        )
        if waited.phase is not Phase.SUCCEEDED:
            # While the sequence still reaches the margin, the step holds the candidate at 50%.
            (record,) = waited.analysis
            assert waited.phase is Phase.PROGRESSING and waited.current_step_index == 0
            assert record.sequential is not None and record.sequential.bounds is not None
            upper = record.sequential.bounds.rate_ratio_upper
            assert upper is None or upper > MARGIN, upper
        final = scenario.wait_for_status("the end", lambda s: s.phase in FINISHED, timeout=60)
        assert final.phase is Phase.SUCCEEDED, final.message
        (record,) = final.analysis
        evidence = record.sequential
        assert record.verdict is Verdict.PASS and evidence is not None and evidence.bounds is not None
        upper = evidence.bounds.rate_ratio_upper
        assert upper is not None and upper <= MARGIN  # exclusive: the ratio is below it
        assert evidence.bounds.log_margin_evidence is not None
        assert evidence.bounds.log_margin_evidence >= math.log(1 / ALPHA)
        # It waited: an Inconclusive evaluation at least (the baseline) before the Pass that promoted.
        verdicts = [sample.verdict for sample in record.history]
        assert Verdict.INCONCLUSIVE in verdicts and verdicts[-1] is Verdict.PASS, verdicts
        assert evidence.candidate_events > 0 and evidence.incumbent_events > 0


def _waiting_on_counts(record: MetricAnalysis) -> bool:
    """Inconclusive with counts in hand: the sequence does not yet lie below the margin."""
    evidence = record.sequential
    return record.verdict is Verdict.INCONCLUSIVE and evidence is not None and evidence.bounds is not None


def test_the_sequential_test_rolls_back_3_percent_errors_against_1_percent_at_10_percent_traffic(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    record_property: Any,
) -> None:
    tested = {"name": "errors", "preset": "errorRate", "sequential": {"alpha": ALPHA}}
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 10}, {"pause": {}}],  # 10% until a promote that never comes
        prometheus=local_bed.prometheus_url,
        metrics=[tested],  # no fixed bound: only the sequential test can roll back
        interval="2s",
    )
    candidate, incumbent = Behaviour(error_rate=0.03), Behaviour(error_rate=0.01)
    with serving(local_bed, api_client, namespace, candidate, incumbent=incumbent, rps=200) as scenario:
        scenario.apply(manifest)
        final = scenario.wait_for_status("a rollback", lambda s: s.phase in ENDED, timeout=150)
        assert final.phase is Phase.ROLLED_BACK, final.message
        reason = final.rollback_reason
        assert reason is not None and reason.metric == "errors"
        assert "sequential test" in reason.message
        (record,) = final.analysis
        evidence = record.sequential
        assert record.verdict is Verdict.FAIL and evidence is not None
        assert evidence.log_evidence >= math.log(1 / ALPHA)
        # What the test counted: about 10% of the requests, and a higher error share on the candidate.
        share = evidence.candidate_requests / (evidence.candidate_requests + evidence.incumbent_requests)
        assert 0.05 < share < 0.2, share
        candidate_rate = evidence.candidate_events / evidence.candidate_requests
        incumbent_rate = evidence.incumbent_events / evidence.incumbent_requests
        assert candidate_rate > incumbent_rate
        # Differences of counters' totals: whole requests and events, none extrapolated or doubled.
        counted = (
            evidence.candidate_events,
            evidence.candidate_requests,
            evidence.incumbent_events,
            evidence.incumbent_requests,
        )
        assert all(n.is_integer() for n in counted), counted
        assert scenario.recorder.weights_until(0) == [0, 10, 0]

        at_10 = scenario.recorder.first_time_at(10, after=0)
        assert at_10 is not None
        took = reason.time.timestamp() - at_10
        measured = (
            f"{took:.1f}s from weight 10 to the rollback; candidate {evidence.candidate_events:.0f} errors"
            f" / {evidence.candidate_requests:.0f} requests ({candidate_rate:.2%}), incumbent"
            f" {evidence.incumbent_events:.0f} / {evidence.incumbent_requests:.0f} ({incumbent_rate:.2%}),"
            f" evidence {math.exp(evidence.log_evidence):.1f} >= 1/alpha = {1 / ALPHA:.0f}"
        )
        record_property("sequential test, 3% vs 1% at 10% traffic, 200 req/s", measured)
