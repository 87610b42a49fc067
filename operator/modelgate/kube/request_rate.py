"""The operator's own limit on its rate of API requests (client-go's QPS and burst), sized from the
objects it handles.

The API server's priority and fairness (the chart's FlowSchema) protects the server from the
operator; this limit protects the server's other clients from a loop of the operator's that asks far
more than any rollout needs, before the server must queue or refuse it. A bench rollout asks about
15 requests a minute at its busiest (bench/REPORT.md); the sized rate allows twice that for every
rollout and evaluation the operator handles, and never less than a controller-runtime client's
default, so that it bites only on a runaway and never paces ordinary work (docs/scaling.md).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

# controller-runtime's client defaults (QPS 20, burst 30): what a small operator is given.
MIN_QPS = 20.0
# Twice the 15 requests a minute a bench rollout asks at its busiest.
QPS_PER_OBJECT = 0.5
# A burst is this many seconds of the rate: a restart's first ticks, which all read and write at once.
BURST_SECONDS = 2.0


@dataclass(frozen=True)
class RateSizing:
    """`--api-qps` and `--api-burst`; None: sized from the objects handled."""

    qps: float | None = None
    burst: int | None = None

    def qps_for(self, objects: int) -> float:
        return self.qps if self.qps is not None else max(MIN_QPS, QPS_PER_OBJECT * objects)

    def burst_for(self, objects: int) -> int:
        if self.burst is not None:
            return self.burst
        return max(1, round(self.qps_for(objects) * BURST_SECONDS))


class RequestRate:
    """A token bucket shared by the operator's threads. A request takes a token; without one it
    reserves the next and sleeps until it is due (the bucket may go below zero by the reservations
    waiting), so requests leave in the order they asked, at most `burst` at once and then at the
    rate."""

    def __init__(
        self,
        sizing: RateSizing,
        objects: Callable[[], int],
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.sizing = sizing
        self._objects = objects
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(sizing.burst_for(objects()))
        self._refilled = clock()

    def take(self) -> float:
        """Waits for a token; returns the seconds waited."""
        with self._lock:
            objects = self._objects()
            qps, burst = self.sizing.qps_for(objects), self.sizing.burst_for(objects)
            now = self._clock()
            self._tokens = min(float(burst), self._tokens + (now - self._refilled) * qps) - 1.0
            self._refilled = now
            wait = max(0.0, -self._tokens / qps)
        if wait:
            self._sleep(wait)
        return wait
