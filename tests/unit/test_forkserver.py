"""testbed.forkserver: a forked process runs as a `python -m` child would (its own session, its
output in its log, its environment), outlives the server, and a request the server cannot serve is
refused by name without ending the server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.forkserver import KILLED, ForkServer, ForkServerError
from testbed.processes import ProcessRegistry, python_module_env, wait_exited

ENTRIES = "tests.support.forked_entries"


@pytest.fixture
def server() -> Iterator[ForkServer]:
    server = ForkServer(python_module_env(), preload=[ENTRIES])
    yield server
    server.close()


def _finished_output(pid: int, log: Path) -> str:
    assert wait_exited(pid, timeout=30), f"process {pid} did not end"
    return log.read_text()


def test_a_forked_process_runs_its_entry_point_in_a_session_of_its_own_with_its_output_in_its_log(
    server: ForkServer, tmp_path: Path
) -> None:
    log = tmp_path / "report.log"
    pid = server.spawn(f"{ENTRIES}:report", ["--flag", "value"], log, {"FORK_TEST": "set"})
    assert pid != os.getpid()
    printed = json.loads(_finished_output(pid, log))
    assert printed == {
        "args": ["--flag", "value"],
        "argv": ["--flag", "value"],
        "own_session": True,
        "stdin": "",
        "env": "set",
        "inherited_files": [],
    }


def test_a_message_given_to_exit_goes_to_the_log(server: ForkServer, tmp_path: Path) -> None:
    log = tmp_path / "exit.log"
    pid = server.spawn(f"{ENTRIES}:report", ["exit-with-message"], log, {})
    assert _finished_output(pid, log).splitlines()[-1] == "the entry point gave up"


def test_an_entry_point_that_does_not_exist_is_refused_by_name_and_the_server_serves_on(
    server: ForkServer, tmp_path: Path
) -> None:
    with pytest.raises(ForkServerError, match="no_such_module"):
        server.spawn("no_such_module:main", [], tmp_path / "missing.log", {})
    with pytest.raises(ForkServerError, match="no_such_function"):
        server.spawn(f"{ENTRIES}:no_such_function", [], tmp_path / "missing.log", {})
    log = tmp_path / "after.log"
    pid = server.spawn(f"{ENTRIES}:report", [], log, {})
    assert json.loads(_finished_output(pid, log))["args"] == []


def test_a_forked_process_outlives_the_server_and_stops_by_its_pid(
    server: ForkServer, tmp_path: Path
) -> None:
    pid = server.spawn(f"{ENTRIES}:wait_for_sigterm", [], tmp_path / "waiting.log", {})
    server.close()
    assert not wait_exited(pid, timeout=0.5)  # still running without its server
    os.kill(pid, signal.SIGTERM)
    assert wait_exited(pid, timeout=30), f"process {pid} did not end on SIGTERM"


def test_the_registry_records_a_forked_process_as_running_and_stops_it(tmp_path: Path) -> None:
    registry = ProcessRegistry(tmp_path)
    started = registry.start_python("waiting", f"{ENTRIES}:wait_for_sigterm", [])
    assert registry.is_running(started)
    assert registry.load() == [started]
    registry.stop(started, timeout=30)
    assert not registry.is_running(started)
    assert registry.load() == []


def test_a_run_returns_its_output_and_exit_status_as_a_subprocess_would_with_only_the_env_given(
    server: ForkServer,
) -> None:
    os.environ["FORK_TEST_NOT_PASSED"] = "1"
    try:
        done = server.run(f"{ENTRIES}:answer", ["3", "--flag"], {"ONLY": "this"}, timeout=30)
    finally:
        del os.environ["FORK_TEST_NOT_PASSED"]
    assert done.returncode == 3
    assert json.loads(done.stdout) == {
        "args": ["3", "--flag"],
        "env": {"ONLY": "this"},
        "cwd": str(Path.cwd()),
    }
    assert done.stderr == "to standard error\n"


def test_a_started_process_runs_where_asked_and_is_polled_and_killed_as_a_child_would_be(
    server: ForkServer, tmp_path: Path
) -> None:
    """As the bed runs a gate Pod's `modelgate` command: in its folder, with only its environment,
    output and errors in one file, its exit status polled."""
    output = tmp_path / "output.log"
    done = server.start(f"{ENTRIES}:answer", ["4"], output, {"ONLY": "this"}, cwd=tmp_path)
    assert done.wait(timeout=30) == 4
    printed, error = output.read_text().splitlines()
    assert json.loads(printed) == {"args": ["4"], "env": {"ONLY": "this"}, "cwd": str(tmp_path)}
    assert error == "to standard error"
    waiting = server.start(f"{ENTRIES}:wait_for_sigterm", [], tmp_path / "waiting.log", {}, cwd=tmp_path)
    assert waiting.poll() is None
    waiting.kill()
    assert waiting.wait(timeout=30) == KILLED


def test_a_run_past_its_timeout_is_killed(server: ForkServer) -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        server.run(f"{ENTRIES}:wait_for_sigterm", [], {}, timeout=0.5)
