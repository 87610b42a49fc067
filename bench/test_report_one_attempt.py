"""A ModelRollout re-used for a second candidate (spec.candidate changed, as getting-started does):
`modelgate report` tells the second rollout's story alone, and lists the first."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import Phase
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.cli import modelgate
from tests.support.page import SCREEN, STORY, read_page
from tests.support.scenario import serving

ENDED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)

# Moved out of `make test` for its 20 s: the page tests of tests/unit read the same history.
pytestmark = pytest.mark.bench
NEXT_CANDIDATE = {
    "incumbent": {"deployment": "chat-v2"},
    "candidate": {"deployment": "chat-v3"},
    "trafficRouting": {
        "gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "chat-v2", "candidateBackend": "chat-v3"}
    },
}


def test_the_report_of_a_reused_rollout_shows_only_the_current_candidate(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    failing = {"chat-v3": Behaviour(error_rate=0.3)}
    with serving(local_bed, api_client, namespace, Behaviour(), later=failing) as scenario:
        scenario.apply(
            model_rollout(
                "chat",
                namespace,
                steps=[{"setWeight": 50}],
                prometheus=local_bed.prometheus_url,
                metrics=SEED_METRICS,
                interval="1s",
            )
        )
        promoted = scenario.wait_for_status("chat-v2 to finish", lambda s: s.phase in ENDED)
        assert promoted.phase is Phase.SUCCEEDED, promoted.message
        client.CustomObjectsApi(api_client).patch_namespaced_custom_object(
            API_GROUP, API_VERSION, namespace, PLURAL, "chat", {"spec": NEXT_CANDIDATE}
        )
        final = scenario.wait_for_status(
            "chat-v3 to finish", lambda s: s.rollout_candidate == "chat-v3" and s.phase in ENDED
        )
        assert final.phase is Phase.ROLLED_BACK, final.message
        started = final.rollout_started_at
        assert started is not None

        page_file = tmp_path / "chat.html"
        reported = modelgate(operator.kubeconfig, "report", "chat", "-n", namespace, "-o", str(page_file))
        assert reported.returncode == 0, reported.stdout + reported.stderr

    page = read_page(page_file, STORY)
    weights = page.chart("weights")
    # The chart's time axis and its series start at chat-v3's start: the left edge is that moment.
    assert weights.time_at(0) == pytest.approx(started.timestamp(), abs=0.01)
    assert weights.series("weight")[0][0] == pytest.approx(started.timestamp(), abs=0.01)
    drawn = weights.values("weight")
    assert 100 not in drawn  # chat-v2's ramp is not drawn
    assert 50 in drawn  # chat-v3's step is
    marks = weights.rule_times("steps") + weights.rule_times("rollbacks")
    assert marks and min(marks) >= started.timestamp() - 1, marks
    earlier = page.text.split("Earlier rollouts")[1]
    assert "chat-v2" in earlier and "Succeeded" in earlier

    # The first screen (1400x1000) tells the outcome and shows the weights and the breach, drawn.
    assert page.charts_rendered == len(page.charts)
    assert all(page.boxes[s].bottom <= SCREEN[1] for s in STORY), page.boxes
    outcome = page.text.split("Candidate weight")[0]
    assert "chat-v3" in outcome and "error-rate" in outcome, outcome
    assert page.chart("metric error-rate").rule_values("bound")  # the breach against its bound
