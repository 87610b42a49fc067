"""Polling with a deadline: the bed and the tests wait on observable state, never on fixed sleeps."""

from __future__ import annotations

import http.client
import time
from collections.abc import Callable
from typing import TypeVar

import urllib3
from kubernetes.client.exceptions import ApiException

from modelgate.kube import KubeError

T = TypeVar("T")

# What a probe may raise while the thing it watches is still coming up: a refused or reset
# connection, an HTTP error status, a half-sent response, an API server answering 404 or 503.
# Anything else (a failed assert, a typo, a missing key, a wrong type) is a bug in the probe or
# in what it checks, and waiting longer cannot fix it.
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (
    OSError,  # includes urllib's URLError and HTTPError, requests' errors, socket and TLS errors
    http.client.HTTPException,
    urllib3.exceptions.HTTPError,  # the kubernetes client's MaxRetryError, ProtocolError
    ApiException,
    KubeError,
)


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
    TRANSIENT_ERRORS from the probe count as "not yet", and the last one is reported on timeout;
    any other exception propagates at once."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            result = probe()
            if result is not None and result is not False:
                return result
        except TRANSIENT_ERRORS as error:
            last_error = error
        if time.monotonic() >= deadline:
            detail = f": last error: {type(last_error).__name__}: {last_error}" if last_error else ""
            raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}{detail}") from last_error
        time.sleep(interval)
