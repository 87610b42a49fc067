"""testbed.supervisor: a component that exits is started again, with a growing delay; SIGTERM stops
both."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from testbed.processes import descendants, python_module_env
from testbed.supervisor import MAX_RESTART_DELAY, RESTART_DELAY, STEADY, next_delay
from testbed.waiting import wait_for


def test_the_delay_doubles_while_it_keeps_exiting_and_starts_over_after_a_steady_run() -> None:
    first = next_delay(None, ran_seconds=0.5)
    assert first == RESTART_DELAY
    assert next_delay(first, ran_seconds=0.5) == 2 * RESTART_DELAY
    assert next_delay(MAX_RESTART_DELAY, ran_seconds=0.5) == MAX_RESTART_DELAY
    assert next_delay(MAX_RESTART_DELAY, ran_seconds=STEADY) == RESTART_DELAY


def test_an_exiting_component_is_started_again_until_sigterm(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    component = ["sh", "-c", f"echo started >> {starts}; exit 3"]
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "testbed.supervisor", "--", *component],
        env=python_module_env(),
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_for(
            lambda: starts.exists() and len(starts.read_text().splitlines()) >= 2,
            timeout=30,
            what="a second start",
        )
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=10) == 0
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
            supervisor.wait()


def test_sigterm_stops_a_running_component(tmp_path: Path) -> None:
    supervisor = subprocess.Popen(
        [sys.executable, "-m", "testbed.supervisor", "--", "sleep", "600"],
        env=python_module_env(),
        stdout=subprocess.DEVNULL,
    )
    try:
        [component] = wait_for(lambda: descendants(supervisor.pid) or None, timeout=10, what="the component")
        supervisor.send_signal(signal.SIGTERM)
        assert supervisor.wait(timeout=10) == 0
        assert not Path(f"/proc/{component}").exists()
    finally:
        if supervisor.poll() is None:
            supervisor.kill()
            supervisor.wait()
