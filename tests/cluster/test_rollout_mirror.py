"""The mirror step on the bed: the candidate sees copies of the requests (its own series in the real
Prometheus rise) while every answer a client got came from the incumbent; a candidate that breaches on
the copies is rolled back without a single user request ever sent to it."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from modelgate.api import Phase
from modelgate.metrics.prometheus_http import PrometheusClient
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.route_mirrors import parse_mirrors
from testbed.waiting import wait_for
from tests.support.kube import get_route
from tests.support.operators import operator_events
from tests.support.scenario import Scenario, serving

FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)
RPS = 20


def shadow_rollout(namespace: str, bed: LocalCluster, steps: list[dict[str, Any]]) -> dict[str, Any]:
    return model_rollout(
        "chat", namespace, steps=steps, prometheus=bed.prometheus_url, metrics=SEED_METRICS, interval="1s"
    )


def candidate_requests(bed: LocalCluster, namespace: str) -> float:
    """What the candidate's doubles counted, as the bed's Prometheus scraped it."""
    query = f'sum(http_requests_total{{namespace="{namespace}",deployment="chat-v2"}})'
    return PrometheusClient(bed.prometheus_url, timeout=2).query(query).value or 0.0


def route_mirrors(scenario: Scenario) -> dict[str, float]:
    return parse_mirrors(get_route(scenario.api_client, scenario.namespace, "chat"))


def assert_users_only_reached_the_incumbent(scenario: Scenario) -> None:
    stats = scenario.traffic.driver.stats
    assert set(stats.sent) == {"chat-v1"}, stats.as_dict()
    assert {backend for backend, _ in stats.responses} == {"chat-v1"}, stats.as_dict()
    assert scenario.recorder.candidate_weights() == [0]  # the route never gave it a weight


def test_a_mirror_step_shows_candidate_requests_while_clients_get_the_incumbents_answers(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    steps = [{"mirror": {"percent": 50, "duration": "3s"}}, {"pause": {}}]
    with serving(local_bed, api_client, namespace, Behaviour(), rps=RPS) as scenario:
        scenario.apply(shadow_rollout(namespace, local_bed, steps))

        mirroring = scenario.wait_for_status("the mirror live", lambda s: s.live_mirror_percent == 50)
        assert (mirroring.current_step_index, mirroring.current_weight) == (0, 0)
        wait_for(
            lambda: candidate_requests(local_bed, namespace) >= 10,
            timeout=30,
            what="the candidate's requests in Prometheus",
        )

        # The rollout goes on: the step ends after its time on passing metrics, and the mirror goes.
        paused = scenario.wait_for_status(
            "step 1, the mirror removed",
            lambda s: s.phase is Phase.PAUSED and s.current_step_index == 1 and s.live_mirror_percent == 0,
        )
        assert paused.current_weight == 0
        assert route_mirrors(scenario) == {}
        stats = scenario.traffic.driver.stats
        assert stats.mirrored["chat-v2"] > 0
        assert_users_only_reached_the_incumbent(scenario)
        said = " ".join(e["note"] for e in operator_events(api_client, namespace)["chat"])
        assert "copying 50% of requests to the candidate" in said
        assert "no more requests are copied to the candidate" in said
        print(  # shown with -s
            f"copies to the candidate: {stats.mirrored['chat-v2']}; its requests in Prometheus:"
            f" {candidate_requests(local_bed, namespace):g}; client answers: {dict(stats.responses)}"
        )


def test_a_candidate_breaching_on_the_copies_is_rolled_back_before_any_user_reaches_it(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    steps = [{"mirror": {"percent": 50, "duration": "1m"}}, {"setWeight": 50}]
    with serving(local_bed, api_client, namespace, Behaviour(error_rate=0.5), rps=RPS) as scenario:
        scenario.apply(shadow_rollout(namespace, local_bed, steps))

        final = scenario.wait_for_status(
            "a rollback", lambda s: s.phase in FINISHED and s.live_mirror_percent == 0
        )

        assert final.phase is Phase.ROLLED_BACK, final.message
        assert final.rollback_reason is not None and final.rollback_reason.metric == "error-rate"
        assert final.current_step_index == 0
        assert route_mirrors(scenario) == {}
        assert scenario.traffic.driver.stats.mirrored["chat-v2"] > 0
        assert_users_only_reached_the_incumbent(scenario)
