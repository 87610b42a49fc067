"""Polling with a deadline: the bed and the tests wait on observable state, never on fixed sleeps."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class WaitTimeout(TimeoutError):
    pass


def wait_for(
    probe: Callable[[], T | None],
    *,
    timeout: float,
    what: str,
    interval: float = 0.1,
) -> T:
    """Calls `probe` until it returns something other than None or False, and returns that.
    Exceptions from the probe count as "not yet"; the last one is reported on timeout."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            result = probe()
            if result is not None and result is not False:
                return result
        except Exception as error:  # any failure of a probe means "not ready yet"
            last_error = error
        if time.monotonic() >= deadline:
            detail = f": last error: {last_error}" if last_error else ""
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}{detail}")
        time.sleep(interval)
