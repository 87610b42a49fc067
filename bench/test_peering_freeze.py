"""A replica that kopf pauses after it started acting (a peer with a higher priority appears) stops
ticking its rollouts, and resumes them when that peer is gone. Three stand-by rechecks of 5 s each
make it a bench test; tests/cluster/test_operator_peering.py keeps the takeover after a kill."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from modelgate.api import Phase
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.cluster.test_operator_peering import Peers, peers  # noqa: F401
from tests.support.kube import route_weights
from tests.support.operators import running

pytestmark = pytest.mark.bench


def stand_bys(process: OperatorProcess) -> int:
    """How many times the replica's loops looked and stood by."""
    return sum(1 for record in process.log_records() if record.get("event") == "standing by")


def test_an_active_replica_paused_by_a_higher_peer_stops_ticking(peers: Peers) -> None:  # noqa: F811
    """kopf pauses its watches when a peer with a higher priority appears (here a record such as
    `kopf freeze` writes); the rollout loops the replica already runs must stand by as well."""
    only = peers.replica("only")
    with running(only):
        peers.start_rollout([{"pause": {}}, {"setWeight": 60}])
        peers.wait_for_phase(Phase.PAUSED, "the replica to start the rollout")
        freezer = {"priority": 0, "lifetime": 600, "lastseen": datetime.now(UTC).isoformat()}
        peers.patch_records({"freezer": freezer})
        wait_for(lambda: stand_bys(only) > 0, timeout=30, what="the rollout's loop to stand by")

        peers.promote()
        looked = stand_bys(only)
        wait_for(
            lambda: stand_bys(only) > looked, timeout=30, what="the loop to look again after the promotion"
        )
        frozen = peers.status()
        assert frozen.phase is Phase.PAUSED and frozen.last_command is None
        assert route_weights(peers.api_client, peers.namespace, "chat") == {"chat-v1": 100, "chat-v2": 0}

        peers.patch_records({"freezer": None})
        peers.wait_for_phase(Phase.SUCCEEDED, "the replica to resume and apply the promotion")
