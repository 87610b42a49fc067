"""The bed's stand-in for the kubelet of gate check Pods: kwok leaves them alone (its stages that run
Pods skip them, deletion stays kwok's), and a container's command line runs on this machine."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from modelgate.kube.checks import CHECK_LABEL
from testbed.check_pods import local_command, run_command, translated
from testbed.kwok_stages import write_stages
from testbed.versions import pinned_versions


def test_kwok_runs_every_pod_but_a_gate_checks_and_still_deletes_them(tmp_path: Path) -> None:
    stages = {
        stage["metadata"]["name"]: stage
        for stage in yaml.safe_load_all(
            write_stages(tmp_path / "stages.yaml", pinned_versions()["KWOK_VERSION"]).read_text()
        )
    }
    skip = {"key": f'.metadata.labels["{CHECK_LABEL}"]', "operator": "DoesNotExist"}
    for name in ("pod-ready", "pod-complete"):
        assert skip in stages[name]["spec"]["selector"]["matchExpressions"]
    assert skip not in stages["pod-delete"]["spec"]["selector"]["matchExpressions"]


def test_a_containers_command_runs_with_this_interpreter_and_its_paths_translated() -> None:
    assert local_command(["python", "-m", "tool"]) == [sys.executable, "-m", "tool"]
    replacements = {
        "/dev/termination-log": "/tmp/p/log",
        "http://chat-v2.ns.svc:8000": "http://127.0.0.1:4100",
    }
    assert (
        translated("--candidate=http://chat-v2.ns.svc:8000/v1", replacements)
        == "--candidate=http://127.0.0.1:4100/v1"
    )
    assert translated("--result-file=/dev/termination-log", replacements) == "--result-file=/tmp/p/log"


def test_the_operators_cli_is_forked_and_its_exit_status_and_output_are_the_commands(tmp_path: Path) -> None:
    process = run_command(["modelgate", "eval", "--no-such-option"], {"HOME": str(tmp_path)}, tmp_path)
    assert process.wait(timeout=60) == 2  # argparse's status for bad usage
    assert "required: --candidate" in (tmp_path / "output.log").read_text()
    process = run_command(["modelgate", "eval", "--help"], {"HOME": str(tmp_path)}, tmp_path)
    assert process.wait(timeout=60) == 0
    assert "usage:" in (tmp_path / "output.log").read_text()
