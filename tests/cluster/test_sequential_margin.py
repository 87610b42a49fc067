"""Pass on evidence, on the bed: a sequential test with a non-inferiority margin promotes an A/A
candidate only once its confidence sequence lies below the margin; until then the step waits,
Inconclusive, with the progress deadline bounding the wait (issue 22).

Traffic chosen so it ends well within a minute (tooling/sequential_sim.py, 2,000 simulated runs):
200 requests/s, a 50% step, a 10% error rate on both sides and a margin of 1.5 at a 2 s interval pass
after 6 intervals at the median and 13 at the 90th percentile (12 s and 26 s of counts)."""

from __future__ import annotations

import math

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
