"""What the operator's logs say and how: its start-up line (version, scope, workers), a promotion at
info and a rollback at warning, and console logs without colour codes when they go to a file."""

from __future__ import annotations

import copy
import importlib
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
import structlog
from structlog.testing import capture_logs

from modelgate import __version__
from modelgate.cli import run
from modelgate.cli.main import build_parser
from modelgate.commands import COMMAND_ANNOTATION
from modelgate.kube import Kube
from modelgate.observability import configure_logging
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


def test_verbose_is_the_debug_level() -> None:
    assert run.log_level(build_parser().parse_args(["run", "--verbose"])) == logging.DEBUG
    assert run.log_level(build_parser().parse_args(["run"])) == logging.INFO


@pytest.fixture
def restored_logging() -> Iterator[None]:
    yield
    structlog.reset_defaults()


@pytest.fixture
def restored_root_level() -> Iterator[None]:
    level = logging.getLogger().level
    yield
    logging.getLogger().setLevel(level)


@pytest.mark.usefixtures("restored_logging", "restored_root_level")
def test_at_error_level_neither_the_operator_nor_kopf_log_warnings(
    capsys: pytest.CaptureFixture[str],
) -> None:
    run.configure_operator_logging(build_parser().parse_args(["run", "--log-level=error"]))
    # as run_operator does after configuring: importing the handlers must not lower kopf's level
    importlib.import_module("modelgate.handlers")
    structlog.get_logger("test").warning("a slow query")
    structlog.get_logger("test").error("a failed query")
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["event"] for line in lines] == ["a failed query"]
    assert not logging.getLogger("kopf.objects").isEnabledFor(logging.WARNING)
    assert logging.getLogger("kopf.objects").isEnabledFor(logging.ERROR)


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
