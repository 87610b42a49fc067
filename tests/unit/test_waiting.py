"""wait_for retries what a starting component throws and stops at once on a bug in the probe."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from modelgate.kube import KubeError, NotFound
from testbed.waiting import WaitTimeout, wait_for


class Probe:
    """Raises `errors` one call after another, then returns "ready"; counts its calls."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ready"


def unused_port() -> int:
    """A loopback port nobody listens on: bound, never listened to, then released."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize(
    "bug",
    [
        AssertionError("assert 1 == 2"),
        TypeError("'NoneType' object is not subscriptable"),
        NameError("name 'stauts' is not defined"),
        AttributeError("'V1Deployment' object has no attribute 'stauts'"),
        KeyError("weight"),
        ValueError("could not convert string to float: 'x'"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_a_bug_in_the_probe_surfaces_at_once(bug: Exception) -> None:
    probe = Probe(bug, bug)
    with pytest.raises(type(bug)) as raised:
        wait_for(probe, timeout=60, what="anything")
    assert raised.value is bug
    assert probe.calls == 1


@pytest.mark.parametrize(
    "transient",
    [
        ConnectionRefusedError(111, "Connection refused"),
        urllib.error.URLError("[Errno 111] Connection refused"),
        TimeoutError("timed out"),
        ApiException(status=503, reason="Service Unavailable"),
        urllib3.exceptions.MaxRetryError(None, "/api", "Connection refused"),
        NotFound(404, "Deployment ns/chat-v2 not found"),
        KubeError(None, "cannot reach the Kubernetes API server"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_transient_errors_are_retried_until_the_probe_succeeds(transient: Exception) -> None:
    probe = Probe(transient, transient)
    assert wait_for(probe, timeout=60, interval=0.01, what="the server") == "ready"
    assert probe.calls == 3


def test_none_and_false_mean_not_yet() -> None:
    answers: list[object] = [None, False, 0, ""]
    # 0 and "" are results, not "not yet": only None and False make it poll again.
    assert wait_for(lambda: answers.pop(0), timeout=60, interval=0.01, what="an answer") == 0


def test_timeout_names_the_last_transient_error_and_its_type() -> None:
    url = f"http://127.0.0.1:{unused_port()}/healthz"

    def healthy() -> bool:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)

    with pytest.raises(WaitTimeout) as raised:
        wait_for(healthy, timeout=0.2, interval=0.01, what=f"the server at {url}")
    message = str(raised.value)
    assert message.startswith(f"timed out after 0s waiting for the server at {url}: last error: URLError: ")
    assert "Connection refused" in message
    assert isinstance(raised.value.__cause__, urllib.error.URLError)


def test_timeout_without_errors_says_only_what_was_awaited() -> None:
    with pytest.raises(WaitTimeout, match=r"^timed out after 0s waiting for the rollout$"):
        wait_for(lambda: False, timeout=0.05, interval=0.01, what="the rollout")
