"""What the operator's logs say and how: its start-up line (version, scope, workers), a promotion at
info and a rollback at warning, console logs without colour codes when they go to a file, and what
kopf and Python log through the standard library as JSON too, a retried request as a warning."""

from __future__ import annotations

import asyncio
import copy
import io
import json
import logging
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import kopf
import pytest
import structlog
from kopf._cogs.clients import api, errors
from structlog.testing import capture_logs

from modelgate import __version__
from modelgate.cli import run
from modelgate.cli.main import build_parser
from modelgate.commands import COMMAND_ANNOTATION
from modelgate.kube import Kube
from modelgate.observability import STANDARD_LOGS_HANDLER, configure_logging
from modelgate.reconciler import Reconciler
from tests.unit.test_reconciler_scale_down import window_just_passed
from tests.unit.test_reconciler_write_order import NOW, at_the_end_of_the_pause, tick


def ended(logs: list[dict[str, object]]) -> dict[str, object]:
    (entry,) = [entry for entry in logs if entry["event"] == "rollout ended"]
    return entry


def test_a_promotion_is_logged_at_info() -> None:
    kube = window_just_passed(may_scale=True)
    with capture_logs() as logs:
        Reconciler(cast(Kube, kube), clock=lambda: NOW).tick(copy.deepcopy(kube.rollout))
    assert kube.rollout["status"]["phase"] == "Succeeded"
    assert ended(logs)["log_level"] == "info"


def test_a_rollback_is_logged_at_warning() -> None:
    kube = at_the_end_of_the_pause({COMMAND_ANNOTATION: '{"action": "abort", "id": "a1"}'})
    with capture_logs() as logs:
        tick(kube)
    assert kube.rollout["status"]["phase"] == "RolledBack"
    assert ended(logs)["log_level"] == "warning"


@pytest.fixture
def restored_logging() -> Iterator[None]:
    root = logging.getLogger()
    level = root.level
    yield
    structlog.reset_defaults()
    for handler in [h for h in root.handlers if h.get_name() == STANDARD_LOGS_HANDLER]:
        root.removeHandler(handler)
    root.setLevel(level)
    logging.captureWarnings(False)


@pytest.mark.usefixtures("restored_logging")
def test_console_logs_to_a_file_have_no_colour_codes(tmp_path: Path) -> None:
    path = tmp_path / "operator.log"
    with path.open("w") as file:
        configure_logging("console", stream=file)
        structlog.get_logger("test").warning("rollout ended", phase="RolledBack")
    text = path.read_text()
    assert "rollout ended" in text and "RolledBack" in text
    assert "\x1b[" not in text


class Writes(io.StringIO):
    """A stream that keeps each write apart, as an unbuffered file does."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def write(self, text: str) -> int:
        self.calls.append(text)
        return super().write(text)


@pytest.mark.usefixtures("restored_logging")
def test_each_json_line_is_written_whole_with_its_newline() -> None:
    """Standard error shares the operator's log file: a line written in two parts could be split."""
    stream = Writes()
    configure_logging("json", stream=stream)
    structlog.get_logger("test").info("rollout ended", phase="Succeeded")
    structlog.get_logger("test").warning("rollout ended", phase="RolledBack")
    written = [call for call in stream.calls if call]
    assert [json.loads(call)["phase"] for call in written] == ["Succeeded", "RolledBack"]
    assert all(call.endswith("\n") and call.count("\n") == 1 for call in written)


class Stop(Exception):
    """Raised where the operator would first reach the API server: the start-up is logged by then."""


def test_the_operator_logs_what_it_watches_when_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(run, "configure_logging", lambda *args, **kwargs: None)

    def no_cluster(*args: object, **kwargs: object) -> Kube:
        raise Stop

    monkeypatch.setattr(run.Kube, "from_kubeconfig", no_cluster)
    args = build_parser().parse_args(
        # --metrics-address port 0: no /metrics server (the default port may be another process's)
        [
            "run",
            "-n",
            "serving",
            "-n",
            "staging",
            "--selector",
            "modelgate.io/shard=a",
            "--workers",
            "3",
            "--metrics-address",
            "127.0.0.1:0",
        ]
    )
    with capture_logs() as logs, pytest.raises(Stop):
        run.run_operator(args)
    (start,) = [entry for entry in logs if entry["event"] == "operator starting"]
    assert start["log_level"] == "info"
    assert start["version"] == __version__
    assert start["namespaces"] == ["serving", "staging"]
    assert start["selector"] == "modelgate.io/shard=a"
    assert start["workers"] == 3


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


@pytest.mark.usefixtures("restored_logging")
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


@pytest.mark.usefixtures("restored_logging")
def test_a_python_warning_is_a_json_line_too() -> None:
    stream = io.StringIO()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        configure_logging("json", stream=stream)
        warnings.warn("an old API", DeprecationWarning, stacklevel=1)
    (record,) = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert record["level"] == "warning" and "an old API" in record["event"]
