"""Replicas of one operator, one of them acting: kopf's peering (https://docs.kopf.dev/en/latest/peering/).

Every replica keeps its record (priority, lifetime, last seen) in a kopf.dev peering object; kopf
pauses a replica's watch streams while another live replica has a priority not lower than its own.
The per-rollout loops (loops.py) are modelgate's, not kopf's handlers, so kopf's pause does not
reach them: before every tick they apply kopf's rule to the same object themselves, and a replica
that kopf paused after it had started loops stands by as well. The object is read at most once per
PEERING_REFRESH and namespace, not once per tick: with 1,000 rollouts, a read per tick would be
100 GETs a second for one record that changes every few seconds.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import structlog

from modelgate.clock import Clock, utc_now
from modelgate.core.holding import MAX_STATUS_HOLD
from modelgate.kube import Kube, NotFound
from modelgate.reconciler import Reconciler, TickResult

log = structlog.get_logger("modelgate.peering")
PEERING_GROUP = "kopf.dev"
PEERING_VERSION = "v1"
# kopf's own default for a record that does not say its lifetime.
DEFAULT_LIFETIME = 60
# How soon a standing-by loop looks again (kopf resumes its watches on its own).
STANDBY_RECHECK = timedelta(seconds=5)
# How old a read of the peering object may be when a tick uses it; far below kopf's lifetimes.
PEERING_REFRESH = timedelta(seconds=1)


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


class PeeredReconciler(Reconciler):
    """A Reconciler that ticks only while this replica is the one kopf lets act."""

    def __init__(
        self, kube: Kube, peering: Peering, clock: Clock = utc_now, status_hold: timedelta = MAX_STATUS_HOLD
    ) -> None:
        super().__init__(kube, clock, status_hold=status_hold)
        self.peering = peering
        self._records: dict[str, tuple[datetime, Mapping[str, Any] | None]] = {}  # by namespace
        self._lock = threading.Lock()  # one read per namespace at a time, shared by every tick

    def tick_by_name(self, namespace: str, name: str, *, fresh: bool = False) -> TickResult:
        reason = self.standby_reason(namespace)
        if reason is not None:
            log.info("standing by", namespace=namespace, rollout=name, reason=reason)
            return TickResult(None, STANDBY_RECHECK)
        return super().tick_by_name(namespace, name, fresh=fresh)

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
