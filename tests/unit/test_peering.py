"""The standby rule the per-rollout loops apply to kopf's peering object, which must be kopf's own:
another live peer whose priority is not lower than ours pauses us."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from modelgate.peering import PEERING_REFRESH, Peering, PeeringStandby, blocking_peer, seniority_priority

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
ME = Peering("modelgate", "pod-b", priority=-200, clusterwide=True)


def record(priority: int, seen_ago: float, lifetime: int = 60) -> dict[str, object]:
    return {
        "priority": priority,
        "lifetime": lifetime,
        "lastseen": (NOW - timedelta(seconds=seen_ago)).isoformat(),
    }


def test_alone_or_with_lower_peers_we_act() -> None:
    assert blocking_peer({}, ME, NOW) is None
    assert blocking_peer({"pod-b": record(-200, 1)}, ME, NOW) is None  # our own record
    assert blocking_peer({"pod-c": record(-300, 1)}, ME, NOW) is None


def test_a_live_peer_with_a_higher_or_the_same_priority_pauses_us() -> None:
    assert "pod-a" in (blocking_peer({"pod-a": record(-100, 1)}, ME, NOW) or "")
    # kopf pauses both on a tie: neither can tell which should act.
    assert "pod-a" in (blocking_peer({"pod-a": record(-200, 1)}, ME, NOW) or "")


def test_a_peer_whose_record_expired_is_dead() -> None:
    assert blocking_peer({"pod-a": record(-100, 61)}, ME, NOW) is None
    assert blocking_peer({"pod-a": record(-100, 5, lifetime=5)}, ME, NOW) is None
    assert blocking_peer({"pod-a": record(-100, 4, lifetime=5)}, ME, NOW) is not None


def test_a_record_without_lifetime_or_lastseen_gets_kopfs_defaults() -> None:
    assert blocking_peer({"pod-a": {"priority": -100}}, ME, NOW) is not None  # seen now
    stale = {"priority": -100, "lastseen": (NOW - timedelta(seconds=61)).isoformat()}
    assert blocking_peer({"pod-a": stale}, ME, NOW) is None  # 60 s lifetime


def test_the_older_replica_outranks_the_younger() -> None:
    older, younger = seniority_priority(NOW), seniority_priority(NOW + timedelta(microseconds=1))
    assert older > younger


class PeeringObjects:
    """A Kube stand-in holding one KopfPeering per namespace, counting the reads."""

    server_url = "https://127.0.0.1:6443"  # no request goes there

    def __init__(self, records: dict[str, object]) -> None:
        self.records = records
        self.reads = 0

    def get_custom(
        self, group: str, version: str, namespace: str, plural: str, name: str
    ) -> dict[str, object]:
        self.reads += 1
        return {"status": self.records}


def test_ticks_share_one_read_of_the_peering_object_until_it_is_a_refresh_old() -> None:
    kube = PeeringObjects({"pod-a": record(-100, 1)})
    now = [NOW]
    peered = PeeringStandby(kube, Peering("modelgate", "pod-b", -200, clusterwide=False), lambda: now[0])  # type: ignore[arg-type]
    for _ in range(100):
        assert peered.standby_reason("ns") is not None
    assert kube.reads == 1
    kube.records = {}  # the peer left
    now[0] += PEERING_REFRESH
    assert peered.standby_reason("ns") is None
    assert peered.standby_reason("other") is None  # each namespace has its own object
    assert kube.reads == 3
