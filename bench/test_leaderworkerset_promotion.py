"""A good LeaderWorkerSet candidate promoted, on the bed (every step of
examples/topologies/leaderworkerset.yaml with real traffic: about a minute, so it runs in
`make bench`; `make test` runs the rollback naming leader Pods,
tests/cluster/test_leaderworkerset_rollouts.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kubernetes import client

from modelgate.api import Phase
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from testbed.traefik_gateway import TraefikGateway
from tests.cluster.test_leaderworkerset_rollouts import (  # noqa: F401 - lws_controller is a fixture
    SIDES,
    finished,
    lws_controller,
    lws_serving,
    wait_until_served_by_leader,
)
from tests.support.scenario import settled

pytestmark = pytest.mark.bench


@pytest.mark.usefixtures("lws_controller")
def test_a_good_leaderworkerset_candidate_is_promoted(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
    record_property: Callable[[str, object], None],
) -> None:
    with lws_serving(local_bed, api_client, namespace, traefik, None) as (scenario, rollout):
        final = finished(scenario, rollout)
        assert final.phase is Phase.SUCCEEDED, final.message
        scenario.wait_for_status("the promotion on the route", settled(Phase.SUCCEEDED))
        wait_until_served_by_leader(traefik.url, f"{SIDES[1]}-0")
    assert final.rollout_candidate == "leaderworkerset.leaderworkerset.x-k8s.io/chat-v2"
    record_property("verdicts at promotion", {r.name: str(r.verdict) for r in final.analysis})
