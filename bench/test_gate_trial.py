"""docs/gate.md's "Trying it on the local bed", run as written: its first block's trial (the session's
bed stands for `make cluster-up`) and its second block's commands, in a folder laid out as the
checkout is (`.localcluster` is the session's bed), so the page cannot drift from what works."""

from __future__ import annotations

import select
import signal
import subprocess
import time
from pathlib import Path

import pytest
from kubernetes import client

from modelgate.api import Phase, Verdict
from modelgate.api.gate_status import CheckState, GateDecision
from testbed.gate_trial import NAMESPACE, READY
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from testbed.versions import REPO_ROOT
from tests.support.doc_blocks import checkout, documented_blocks, run_commands
from tests.support.operators import admin_operator_stopped
from tests.support.scenario import Rollouts

pytestmark = pytest.mark.bench  # a walkthrough of the docs, run by `make bench` (bench/REPORT.md)

DOC = REPO_ROOT / "docs" / "gate.md"
SECTION = "## Trying it on the local bed"


def wait_until_ready(trial: subprocess.Popen[str], timeout: float) -> None:
    assert trial.stdout is not None
    deadline = time.monotonic() + timeout
    said = []
    while time.monotonic() < deadline and trial.poll() is None:
        if select.select([trial.stdout], [], [], 0.5)[0]:
            line = trial.stdout.readline()
            said.append(line)
            if line.startswith(READY):
                return
    raise AssertionError(f"the trial never said {READY!r}: {''.join(said)}")


def test_the_documented_trial_gates_a_rollout_on_the_bed(
    local_bed: LocalCluster, api_client: client.ApiClient, operator: OperatorProcess, tmp_path: Path
) -> None:
    (bed_up, start_trial), commands = documented_blocks(DOC, SECTION)
    assert bed_up == "make cluster-up"  # the session's bed is up already
    folder, env = checkout(tmp_path, local_bed)
    with admin_operator_stopped(operator):
        trial = subprocess.Popen(
            ["bash", "-c", f"exec {start_trial}"],
            cwd=folder,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            wait_until_ready(trial, timeout=60)
            ran = run_commands(commands, folder, env, timeout=180, stop_on_error=True)
            assert ran.returncode == 0, ran.stdout + ran.stderr
            assert "Succeeded" in ran.stdout  # modelgate status
            final = Rollouts(api_client, NAMESPACE).status()
            assert final.phase is Phase.SUCCEEDED and final.gate is not None
            assert final.gate.decision is GateDecision.CANARY
            (check,) = final.gate.checks
            assert (check.state, check.verdict) == (CheckState.MEASURED, Verdict.PASS), check.message
            assert {s.name: (s.candidate, s.incumbent) for s in check.scores} == {
                "math": (0.9, 0.8),
                "code": (0.8, 0.8),
                "extraction": (1.0, 1.0),
            }
        finally:
            trial.send_signal(signal.SIGTERM)
            trial.wait(timeout=60)
