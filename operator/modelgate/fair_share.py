"""Which waiting ticks may take a worker thread now: fair shares across namespaces.

Which waiting ticks may take a worker thread now: fair shares across namespaces, so that one
tenant's hanging ticks (a Prometheus that never answers, say) cannot hold the threads every other
tenant's rollbacks need. Pure bookkeeping: the caller says when ticks ask, start and end, and when.

Nobody can tell in advance that a tick will hang: one that has run `slow_after` is parked (it keeps
its thread, but no longer counts against the ordinary namespaces' workers), and its namespace's
ticks run from then on among the slow ones:
- A namespace is slow while one of its ticks runs past `slow_after`, and for `slow_memory` after one
  ended so.
- The other namespaces' ticks run `workers` at once.
- Slow namespaces' ticks run `workers` at once too, apart: each namespace's at most its share,
  ceil(workers / slow namespaces with ticks running or waiting).
- Beyond those, a slow namespace with no tick running may start one while fewer than
  `threads - workers` run in all: one slow tick (a loaded machine, a Prometheus slow once) does not
  queue a tenant behind hanging ones for `slow_memory`; it waits only where more namespaces hang than
  that room holds.
- At most `threads` ticks run in all (more than twice `workers`: ticks parked in a namespace only
  just found slow).
- A free worker goes to the namespace running the fewest ticks, then to the longest waiting.
So an ordinary tick waits for a worker at most `slow_after` for every `workers` namespaces whose
ticks begin to hang at the same time, and not at all once they are known to be slow.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from typing import Generic, TypeVar

Ticket = TypeVar("Ticket")


@dataclass
class _Namespace(Generic[Ticket]):
    waiting: deque[tuple[int, Ticket]] = field(default_factory=deque)  # (arrival, ticket)
    running: dict[Ticket, float] = field(default_factory=dict)  # ticket: when it started


class FairShare(Generic[Ticket]):
    def __init__(self, workers: int, threads: int, slow_after: float, slow_memory: float) -> None:
        if not 1 <= workers <= threads:
            raise ValueError(f"need 1 <= workers <= threads, got {workers} and {threads}")
        self.workers, self.threads = workers, threads
        self.slow_after = slow_after
        self.slow_memory = slow_memory
        self._namespaces: dict[str, _Namespace[Ticket]] = {}  # those with ticks waiting or running
        self._slow_until: dict[str, float] = {}  # a slow tick of theirs ended: slow until then
        self._arrivals = 0

    def ask(self, namespace: str, ticket: Ticket) -> None:
        """A tick of `namespace` waits for a worker."""
        self._arrivals += 1
        self._namespaces.setdefault(namespace, _Namespace()).waiting.append((self._arrivals, ticket))

    def withdraw(self, namespace: str, ticket: Ticket) -> None:
        """A waiting tick no longer wants a worker (its loop was cancelled)."""
        state = self._namespaces.get(namespace)
        if state is not None:
            state.waiting = deque(entry for entry in state.waiting if entry[1] != ticket)
            self._drop_if_idle(namespace, state)

    def end(self, namespace: str, ticket: Ticket, now: float) -> None:
        """A running tick ended (or was given up on) at `now`; its worker is free."""
        state = self._namespaces[namespace]
        started = state.running.pop(ticket)
        if now - started >= self.slow_after:
            self._slow_until[namespace] = now + self.slow_memory
        self._drop_if_idle(namespace, state)

    def start(self, now: float) -> list[tuple[str, Ticket]]:
        """The waiting ticks that take a worker now, marked running from `now`."""
        self._slow_until = {namespace: until for namespace, until in self._slow_until.items() if until > now}
        started: list[tuple[str, Ticket]] = []
        while True:
            chosen = self._next(now)
            if chosen is None:
                break
            state = self._namespaces[chosen]
            _, ticket = state.waiting.popleft()
            state.running[ticket] = now
            started.append((chosen, ticket))
        return started

    def wake_at(self, now: float) -> float | None:
        """When the next busy tick is parked, which frees a worker, if a tick waits for one."""
        if not any(state.waiting for state in self._namespaces.values()):
            return None
        parked_at = [
            started + self.slow_after
            for state in self._namespaces.values()
            for started in state.running.values()
            if started + self.slow_after > now
        ]
        return min(parked_at, default=None)

    def running(self, namespace: str) -> int:
        state = self._namespaces.get(namespace)
        return 0 if state is None else len(state.running)

    def is_slow(self, namespace: str, now: float) -> bool:
        if now < self._slow_until.get(namespace, -math.inf):
            return True
        state = self._namespaces.get(namespace)
        return state is not None and any(
            now - started >= self.slow_after for started in state.running.values()
        )

    def _next(self, now: float) -> str | None:
        total = sum(len(state.running) for state in self._namespaces.values())
        if total >= self.threads:
            return None
        slow = {namespace for namespace in self._namespaces if self.is_slow(namespace, now)}
        slow_running = sum(self.running(namespace) for namespace in slow)
        busy = sum(
            len(state.running) for namespace, state in self._namespaces.items() if namespace not in slow
        )
        share = math.ceil(self.workers / len(slow)) if slow else self.workers
        eligible = [
            (len(state.running), state.waiting[0][0], namespace)
            for namespace, state in self._namespaces.items()
            if state.waiting
            and (
                busy < self.workers
                if namespace not in slow
                else (slow_running < self.workers and len(state.running) < share)
                or (not state.running and total < self.threads - self.workers)
            )
        ]
        return min(eligible)[2] if eligible else None

    def _drop_if_idle(self, namespace: str, state: _Namespace[Ticket]) -> None:
        # An idle namespace does not dilute the others' shares.
        if not state.waiting and not state.running:
            del self._namespaces[namespace]
