"""The only errors modelgate.kube raises: not there, or the API server cannot be asked.

The only errors modelgate.kube raises: callers can tell "the object is not there" from "the API
server cannot be asked right now" without knowing the client library."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import urllib3
from kubernetes.client.exceptions import ApiException

# The status cause the API server gives a request refused because its namespace is being deleted.
NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"


class ObjectGone(Exception):
    """The object a loop ticks no longer exists: its loop ends (loops.py)."""


class KubeError(Exception):
    """A request failed. `status` is the HTTP status, or None when no response arrived."""

    def __init__(self, status: int | None, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class KubeconfigMissing(KubeError):
    """No kubeconfig file where one was looked for: `path` (as the user would type it)."""

    def __init__(self, path: str) -> None:
        super().__init__(None, f"no kubeconfig at {path}")
        self.path = path


class NotFound(KubeError):
    """The object (or the key asked for inside it) does not exist."""


class Conflict(KubeError):
    """The object changed under the caller: HTTP 409 (a stale resourceVersion, or it already
    exists), or status None from a read-modify-write that kept losing the race to other writers."""


class NamespaceTerminating(KubeError):
    """403 from creating something in a namespace that is being deleted (the API server's status cause
    NamespaceTerminating): everything in it goes with it."""


class PatchNotApplied(KubeError):
    """422 from a JSON patch that could not be applied: a `test` op did not hold, or an op's path
    does not exist. The API server answers both with the same generic 422 (reason Invalid, message
    "the server rejected our request due to an error in our request", no causes); it drops the
    patch library's own error text. A 422 *with* causes is a schema violation, a plain KubeError."""


@contextmanager
def translated(*, json_patch: bool = False) -> Iterator[None]:
    """Turns the client's exceptions into ours."""
    try:
        yield
    except ApiException as error:
        _raise_translated(error, json_patch=json_patch)
    except urllib3.exceptions.HTTPError as error:  # connection refused, timeouts, TLS failures
        # After its retries urllib3 wraps the cause in "Max retries exceeded with url: ...": say the cause.
        cause = getattr(error, "reason", None) or error
        raise KubeError(None, f"cannot reach the Kubernetes API server: {cause}") from None


def _causes(status: dict[str, Any]) -> list[dict[str, Any]]:
    causes = (status.get("details") or {}).get("causes") or []
    return [cause for cause in causes if isinstance(cause, dict)]


def _raise_translated(error: ApiException, *, json_patch: bool) -> NoReturn:
    status: dict[str, Any] = {}
    try:
        parsed = json.loads(error.body or "")
        if isinstance(parsed, dict):
            status = parsed
    except ValueError:
        pass
    message = str(status.get("message") or error.reason or "no message")
    code = error.status
    if code == 404:
        raise NotFound(code, message) from None
    if code == 409:
        raise Conflict(code, message) from None
    if code == 403 and any(cause.get("reason") == NAMESPACE_TERMINATING_CAUSE for cause in _causes(status)):
        raise NamespaceTerminating(code, message) from None
    if code == 422 and json_patch and not (status.get("details") or {}).get("causes"):
        raise PatchNotApplied(code, message) from None
    raise KubeError(code, message) from None
