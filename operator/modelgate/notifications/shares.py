"""Each tenant's share of the notification queue: remembered keys and posts in flight.

What the notification queue holds for every tenant at once, split so that none takes another's
part: the keys it remembers (per rollout, within each namespace's bound), and the posts in flight
(at most a share per namespace).

A key forgotten is delivered again when a later tick submits it, and is not seen finished, so its
rollout's status keeps it pending: with one memory for all, a tenant's notifications pushed every
other tenant's keys out of it.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

# The keys of one rollout: its status lists at most MAX_PENDING (10) at a time.
KEYS_PER_ROLLOUT = 32
# The rollouts remembered per namespace, the least recently notified forgotten first.
ROLLOUTS_PER_NAMESPACE = 256
# A namespace's posts in flight, as a share of all of them: a tenant whose receivers hang holds
# this many connections, and the others' posts go on.
NAMESPACE_SHARE = 4


@dataclass
class _RolloutKeys:
    submitted: OrderedDict[str, None] = field(default_factory=OrderedDict)
    finished: OrderedDict[str, None] = field(default_factory=OrderedDict)


def rollout_of(key: str) -> str:
    """The rollout's uid, which a notification's key begins with (NotificationPending.key)."""
    return key.partition("/")[0]


class DeliveryMemory:
    """The keys submitted and those whose delivery ended, per rollout. Not thread-safe: the
    Notifier holds its lock around each call."""

    def __init__(
        self, keys_per_rollout: int = KEYS_PER_ROLLOUT, rollouts_per_namespace: int = ROLLOUTS_PER_NAMESPACE
    ) -> None:
        self._keys_per_rollout = keys_per_rollout
        self._rollouts_per_namespace = rollouts_per_namespace
        self._namespaces: dict[str, OrderedDict[str, _RolloutKeys]] = {}
        self._rollouts: dict[str, _RolloutKeys] = {}  # by uid

    def submit(self, namespace: str, key: str) -> bool:
        """Remembers `key` as submitted; False when it was already."""
        uid = rollout_of(key)
        rollouts = self._namespaces.setdefault(namespace, OrderedDict())
        rollouts[uid] = self._rollouts.setdefault(uid, _RolloutKeys())
        rollouts.move_to_end(uid)
        rollout = rollouts[uid]
        if key in rollout.submitted:
            return False
        self._remember(rollout.submitted, key)
        while len(rollouts) > self._rollouts_per_namespace:
            forgotten, _ = rollouts.popitem(last=False)
            del self._rollouts[forgotten]
        return True

    def finish(self, key: str) -> None:
        rollout = self._rollouts.get(rollout_of(key))
        if rollout is not None:
            self._remember(rollout.finished, key)

    def finished(self, keys: Iterable[str]) -> frozenset[str]:
        """Those of `keys` whose delivery ended."""
        return frozenset(key for key in keys if key in self._rollout_finished(key))

    def _rollout_finished(self, key: str) -> OrderedDict[str, None]:
        rollout = self._rollouts.get(rollout_of(key))
        return OrderedDict() if rollout is None else rollout.finished

    def _remember(self, keys: OrderedDict[str, None], key: str) -> None:
        keys[key] = None
        while len(keys) > self._keys_per_rollout:
            keys.popitem(last=False)


@dataclass
class _Namespace:
    slots: asyncio.Semaphore
    users: int = 0


class NamespaceSlots:
    """At most `total` posts in flight, of which at most a share (`total` / NAMESPACE_SHARE, at
    least 1) for one namespace. Made in the event loop that uses it."""

    def __init__(self, total: int) -> None:
        self._total = asyncio.Semaphore(total)
        self._share = max(1, total // NAMESPACE_SHARE)
        self._namespaces: dict[str, _Namespace] = {}  # those with posts in flight or waiting

    @asynccontextmanager
    async def held(self, namespace: str) -> AsyncIterator[None]:
        own = self._namespaces.setdefault(namespace, _Namespace(asyncio.Semaphore(self._share)))
        own.users += 1
        try:
            async with own.slots, self._total:
                yield
        finally:
            own.users -= 1
            if not own.users:
                del self._namespaces[namespace]
