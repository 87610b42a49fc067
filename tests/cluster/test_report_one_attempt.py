"""A ModelRollout re-used for a second candidate (spec.candidate changed, as getting-started does):
`modelgate report` tells the second rollout's story alone, and lists the first."""

from __future__ import annotations

from pathlib import Path

from kubernetes import client

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import Phase
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.cli import modelgate
from tests.support.page import element_boxes, read_page
from tests.support.scenario import serving

ENDED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)
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

    page = read_page(page_file)
    weights = page.chart("weights")
    # The chart's time axis and its series start at chat-v3's start: the left edge is that moment.
    left = min(float(attrs["x1"]) for tag, attrs in weights.elements if tag == "line")
    first_x = float(weights.with_class("weight")[0]["d"].split(",")[0].lstrip("M"))
    assert first_x == left
    assert 100 not in weights.path_values("weight")  # chat-v2's ramp is not drawn
    assert 50 in weights.path_values("weight")  # chat-v3's step is
    marks = [float(m["data-time"]) for m in weights.with_class("mark")]
    assert marks and min(marks) >= started.timestamp() - 1, marks
    earlier = page.text.split("Earlier rollouts")[1]
    assert "chat-v2" in earlier and "Succeeded" in earlier

    first_screen = ["p.outcome", "svg.weights", "h2.breached", 'svg[class="metric error-rate"]']
    boxes = element_boxes(page_file, first_screen)
    assert all(boxes[s].bottom <= 1000 for s in first_screen), boxes
    outcome = page.text.split("Candidate weight")[0]
    assert "chat-v3" in outcome and "error-rate" in outcome, outcome
