"""docs/getting-started.md's "Try it on your machine first", run as written in a folder laid out as
the checkout is: `make playground` (setup's installs taken as done: the session has them) on the
session's bed, the user's commands, then `make playground-down`. One rollout must end promoted and
the next rolled back, judged by the rollout's status and the live route, and the playground must
leave none of its processes behind. The bed is the session's, so `playground-down` leaves it up
(it stops a bed only where `make playground` started it)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from kubernetes import client

from modelgate.api import Phase
from testbed.demo_serving import serving_documents
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from testbed.playground import NAMESPACE, PROMETHEUS_PORT, Playground
from testbed.ports import bindable
from testbed.processes import descendants, python_module_env, start_time, wait_exited
from testbed.versions import REPO_ROOT
from tests.support.doc_blocks import checkout, documented_blocks, run_commands
from tests.support.kube import route_weights
from tests.support.operators import admin_operator_stopped
from tests.support.scenario import Rollouts

pytestmark = pytest.mark.bench  # a walkthrough of the docs, run by `make bench` (bench/REPORT.md)

DOC = REPO_ROOT / "docs" / "getting-started.md"
SECTION = "## Try it on your machine first"


def run_block(commands: list[str], folder: Path, env: Mapping[str, str], timeout: float) -> str:
    """Its exit code is not judged (the CLI's may change); what the block did is, by the caller."""
    ran = run_commands(commands, folder, env, timeout, stop_on_error=False)
    return ran.stdout + ran.stderr


def running(processes: Mapping[int, str | None]) -> list[int]:
    """The pids still running the process they were (not a later one given the same pid, nor a
    zombie its new parent has yet to reap)."""
    return [pid for pid, born in processes.items() if start_time(pid) == born and not wait_exited(pid, 10)]


def test_the_documented_playground_promotes_one_rollout_and_rolls_back_the_next(
    local_bed: LocalCluster, api_client: client.ApiClient, operator: OperatorProcess, tmp_path: Path
) -> None:
    start, first, second, stop = documented_blocks(DOC, SECTION)
    assert (start, stop) == (["make playground"], ["make playground-down"])
    assert bindable(PROMETHEUS_PORT), f"127.0.0.1:{PROMETHEUS_PORT} is taken: is a playground running?"
    folder, env = checkout(tmp_path, local_bed, "Makefile")
    rollouts = Rollouts(api_client, NAMESPACE)
    with admin_operator_stopped(operator):
        # `-o`: the session's machine has the packages, venv and binaries the playground installs.
        started = run_block(["make -o apt-deps -o venv -o bins-demo playground"], folder, env, timeout=120)
        try:
            (serve,) = Playground(folder / ".localcluster").registry.load()
            ours = [serve.pid, *descendants(serve.pid)]
            pods = sum(d["kind"] == "Deployment" for d in serving_documents())  # one replica each
            assert len(ours) >= 3 + pods, started  # and Traefik, a simulator per Pod, the operator
            processes = {pid: start_time(pid) for pid in ours}

            said = run_block(first, folder, env, timeout=120)
            promoted = rollouts.status()
            assert (promoted.phase, promoted.rollout_candidate) == (Phase.SUCCEEDED, "chat-v2"), said
            assert route_weights(api_client, NAMESPACE, "chat")["chat-v2"] == 100

            user_shell = [line for line in first if line.startswith("export ")]  # still in force
            said = run_block(user_shell + second, folder, env, timeout=150)
            rolled_back = rollouts.status()
            assert (rolled_back.phase, rolled_back.rollout_candidate) == (Phase.ROLLED_BACK, "chat-v3"), said
            reason = rolled_back.rollback_reason
            assert reason is not None and reason.metric == "error-rate", reason
            assert route_weights(api_client, NAMESPACE, "chat") == {
                "chat-v1": 0,
                "chat-v2": 100,
                "chat-v3": 0,
                "chat-v4": 0,
            }
        finally:
            stopped = run_block(stop, folder, env, timeout=90)
        assert running(processes) == [], stopped
        assert local_bed.is_up()  # not the playground's to stop


def run_playground(verb: str, root: Path) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "testbed.playground", verb, "--root", str(root)]
    env = {**os.environ, **python_module_env()}  # go: the bed reads kwok's stages from its module
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=180)


def test_a_playground_that_started_the_bed_stops_it_and_leaves_no_process(tmp_path: Path) -> None:
    """`make playground` on a machine with no bed starts one; `make playground-down` then stops it
    too, every process of both ended (the walkthrough above covers the session's bed, left up)."""
    assert bindable(PROMETHEUS_PORT), f"127.0.0.1:{PROMETHEUS_PORT} is taken: is a playground running?"
    root = tmp_path / "bed"
    playground = Playground(root)
    started = run_playground("up", root)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert playground.bed.is_up() and playground.bed_file.exists(), started.stdout
        (serve,) = playground.registry.load()
        bed_pids = [p.pid for p in playground.bed.processes.load()]
        processes = {pid: start_time(pid) for pid in [serve.pid, *descendants(serve.pid), *bed_pids]}
    finally:
        stopped = run_playground("down", root)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert running(processes) == [], stopped.stdout
    assert not playground.bed.is_up() and not playground.bed_file.exists()
