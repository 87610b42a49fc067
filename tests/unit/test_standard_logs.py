"""What logs through the standard library (kopf, the kubernetes client, Python's warnings) comes out as
the operator's own lines do: JSON with a level and a time, on the same stream; kopf's retried request
to the API server as a warning, one it gives up on as an error."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import types
import warnings
from collections.abc import Iterator

import kopf
import pytest
import structlog
from kopf._cogs.clients import api, errors

from modelgate.observability import ToStructlog, configure_logging


@pytest.fixture(autouse=True)
def restored_logging() -> Iterator[None]:
    root = logging.getLogger()
    level = root.level
    yield
    structlog.reset_defaults()
    for handler in [h for h in root.handlers if isinstance(h, ToStructlog)]:
        root.removeHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(False)


class OverloadedApiServer:
    """kopf's HTTP session to an API server that answers `failures` requests with a 429 (as one whose
    storage is still initialising), then 200."""

    closed = False

    def __init__(self, failures: int) -> None:
        self.failures = failures

    async def request(self, **_: object) -> types.SimpleNamespace:
        if self.failures:
            self.failures -= 1
            status = {"kind": "Status", "message": "storage is (re)initializing"}
            raise errors.APITooManyRequestsError(status, status=429, headers={})
        return types.SimpleNamespace(status=200)


def kopf_request(session: OverloadedApiServer, retries: int) -> None:
    """kopf's own request function (its authentication left out), logging as its watches do."""
    context = types.SimpleNamespace(server="https://127.0.0.1:6443", session=session)
    asyncio.run(
        api.request.__wrapped__(
            "get",
            "/apis/modelgate.io/v1alpha1/modelrollouts",
            settings=kopf.OperatorSettings(),
            backoffs=[0.0] * retries,
            context=context,
            logger=logging.getLogger("kopf._cogs.clients.watching"),
        )
    )


def test_kopf_logs_json_a_retried_request_at_warning_and_one_given_up_at_error() -> None:
    stream = io.StringIO()
    configure_logging("json", stream=stream)
    kopf_request(OverloadedApiServer(failures=1), retries=1)
    with pytest.raises(errors.APITooManyRequestsError):
        kopf_request(OverloadedApiServer(failures=1), retries=0)
    retried, given_up = (json.loads(line) for line in stream.getvalue().splitlines())
    assert (retried["level"], given_up["level"]) == ("warning", "error")
    assert retried["logger"] == given_up["logger"] == "kopf._cogs.clients.watching"
    assert all(record["timestamp"] for record in (retried, given_up))


def test_a_python_warning_is_a_json_line_too() -> None:
    stream = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        configure_logging("json", stream=stream)
        warnings.warn("an old API", DeprecationWarning, stacklevel=1)
    # Only the warning's line: a thread an earlier test left may log to the stream meanwhile.
    records = [json.loads(line) for line in stream.getvalue().splitlines()]
    (record,) = [r for r in records if "an old API" in r["event"]]
    assert record["level"] == "warning"
