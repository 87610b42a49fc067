"""The adapter page's rollout (examples/topologies/adapters.yaml) promoted step by step on llm-d's
InferenceModelRewrite, the endpoint picker's split following each weight: every step with real
traffic, about 40 s, so in `make bench`; `make test` runs the page's rollback, the two teams and the
removed group's refusal (tests/cluster/test_adapter_rollouts.py)."""

from __future__ import annotations

import pytest
from kubernetes import client

from modelgate.api import Phase
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from tests.cluster.test_adapter_rollouts import (
    FINISHED,
    adapter_serving,
    rewrite_targets,
)

pytestmark = pytest.mark.bench


def test_the_pages_adapter_rollout_is_promoted_step_by_step_with_the_pickers_split_following(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    with adapter_serving(local_bed, api_client, namespace) as serving:
        page = serving.page
        serving.rollouts.apply(page.rollout)
        # Smooth weighted round robin: every 10 requests at 10/90 send exactly one to the candidate;
        # the bounds leave room for the requests in flight when the rule changes.
        for weight in [*page.weights, 100]:
            share = serving.split_at(weight)
            assert abs(share - weight / 100) <= 0.05, (weight, share)
        final = serving.rollouts.wait_for_status(
            "the rollout to end", lambda s: s.phase in FINISHED, 60, name=page.rollout["metadata"]["name"]
        )
        assert final.phase is Phase.SUCCEEDED, final.message
        # At 100 the incumbent's target is gone (the API forbids weight 0); the other fields stay.
        assert rewrite_targets(api_client, namespace, page.rewrite) == [
            {"modelRewrite": serving.candidate, "weight": 100}
        ]
        assert {m.name: m.value for m in final.analysis}["errors"] == 0
