"""A good prefill/decode candidate promoted as one group, on the bed (the promotion walks every step
of examples/topologies/prefill-decode.yaml with real traffic: about a minute, so it runs in
`make bench`; `make test` runs the group's rollback, tests/cluster/test_prefill_decode_rollouts.py)."""

from __future__ import annotations

import pytest
from kubernetes import client

from modelgate.api import Phase, Verdict
from modelgate.core import ConditionType
from modelgate.core.reasons import condition
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from testbed.traefik_gateway import TraefikGateway
from tests.cluster.test_prefill_decode_rollouts import (
    MEMBERS,
    answered_by,
    assert_quiet,
    finished,
    prefill_decode_serving,
)
from tests.support.kube import route_weights

pytestmark = pytest.mark.bench


def test_a_good_candidate_is_promoted_as_a_group(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
) -> None:
    with prefill_decode_serving(local_bed, api_client, namespace, traefik, slow_decode=False) as (
        rollout,
        rollouts,
        fleet,
    ):
        final = finished(rollouts, rollout, Phase.SUCCEEDED, timeout=180)
        available = condition(final.conditions, ConditionType.CANDIDATE_AVAILABLE)
        assert available is not None and available.status == "True", available
        by_metric = {record.name: record for record in final.analysis}
        # Each role judged on its own servers: the decode's 10 ms a token, the prefill's 50 ms first token.
        tpot, ttft = by_metric["decode-tpot"], by_metric["prefill-ttft"]
        assert tpot.verdict is Verdict.PASS and tpot.value is not None and tpot.value <= 0.05, tpot
        assert ttft.verdict is Verdict.PASS and ttft.value is not None and 0.03 <= ttft.value <= 0.5, ttft
        assert route_weights(api_client, namespace, "chat") == {"chat-v1-decode": 0, "chat-v2-decode": 100}
        assert_quiet(fleet, quiet=MEMBERS["v1"], busy=MEMBERS["v2"])
        assert answered_by(traefik.url, 10) == {MEMBERS["v2"][::-1]}  # decoded and prefilled by chat-v2
