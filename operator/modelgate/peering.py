"""Replicas of one operator, one of them acting: kopf's peering (https://docs.kopf.dev/en/latest/peering/).

Every replica keeps its record (priority, lifetime, last seen) in a kopf.dev peering object; kopf
pauses a replica's watch streams while another live replica has a priority not lower than its own.
The per-object loops (loops.py, for every kind) are modelgate's, not kopf's handlers, so kopf's pause
does not reach them: before every tick they apply kopf's rule to the same object themselves, and a replica
that kopf paused after it had started loops stands by as well. The object is read at most once per
PEERING_REFRESH and namespace, not once per tick: with 1,000 rollouts, a read per tick would be
100 GETs a second for one record that changes every few seconds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import structlog

from modelgate.clock import Clock, utc_now
from modelgate.kube import Kube, NotFound

log = structlog.get_logger("modelgate.peering")
PEERING_GROUP = "kopf.dev"
PEERING_VERSION = "v1"
# kopf's own default for a record that does not say its lifetime.
DEFAULT_LIFETIME = 60
# How soon a standing-by loop looks again (kopf resumes its watches on its own).
STANDBY_RECHECK = timedelta(seconds=5)
# How old a read of the peering object may be when a tick uses it; far below kopf's lifetimes.
PEERING_REFRESH = timedelta(seconds=1)
# Why this replica must not act in a namespace now, or None.
StandbyReason = Callable[[str], str | None]


@dataclass(frozen=True)
class Peering:
    name: str
    identity: str
    priority: int
    clusterwide: bool  # ClusterKopfPeering; else a KopfPeering in each watched namespace


def seniority_priority(started: datetime) -> int:
    """Older replicas outrank newer ones: a replica that starts while another acts stays a standby,
    so a rolling update or a restarted pod never takes over from a live operator."""
    return -int(started.timestamp() * 1_000_000)


def blocking_peer(records: Mapping[str, Any], peering: Peering, now: datetime) -> str | None:
    """kopf's rule (kopf/_core/engines/peering.py): another live peer whose priority is not lower than
    ours pauses us. `records` is the peering object's status: identity -> priority, lifetime, lastseen."""
    for identity, record in records.items():
        if identity == peering.identity or not isinstance(record, Mapping):
            continue
        lifetime = timedelta(seconds=int(record.get("lifetime", DEFAULT_LIFETIME)))
        lastseen = record.get("lastseen")
        alive = lastseen is None or datetime.fromisoformat(str(lastseen)) + lifetime > now
        if alive and int(record.get("priority", 0)) >= peering.priority:
            return f"peer {identity} (priority {record.get('priority', 0)}) is alive"
    return None


class PeeringStandby:
    """Whether this replica is the one kopf lets act, asked by the loops of every kind before each
    tick (loops.py)."""

    def __init__(self, kube: Kube, peering: Peering, clock: Clock = utc_now) -> None:
        self.kube = kube
        self.peering = peering
        self.clock = clock
        self._records: dict[str, tuple[datetime, Mapping[str, Any] | None]] = {}  # by namespace
        self._lock = threading.Lock()  # one read per namespace at a time, shared by every tick

    def standby_reason(self, namespace: str) -> str | None:
        """Why this replica must not act in `namespace` now, or None."""
        records = self._peering_records(namespace)
        if records is None:
            # kopf pauses too while its peering object is missing.
            return f"the peering object {self.peering.name} does not exist"
        return blocking_peer(records, self.peering, self.clock())

    def _peering_records(self, namespace: str) -> Mapping[str, Any] | None:
        """The peering object's status (None: no such object), read again once PEERING_REFRESH old."""
        key = "" if self.peering.clusterwide else namespace
        with self._lock:
            now = self.clock()
            held = self._records.get(key)
            if held is not None and now - held[0] < PEERING_REFRESH:
                return held[1]
            records = self._read_records(namespace)
            self._records[key] = (now, records)
            return records

    def _read_records(self, namespace: str) -> Mapping[str, Any] | None:
        name = self.peering.name
        try:
            if self.peering.clusterwide:
                body = self.kube.get_cluster_custom(
                    PEERING_GROUP, PEERING_VERSION, "clusterkopfpeerings", name
                )
            else:
                body = self.kube.get_custom(PEERING_GROUP, PEERING_VERSION, namespace, "kopfpeerings", name)
        except NotFound:
            return None
        records: Mapping[str, Any] = body.get("status") or {}
        return records
