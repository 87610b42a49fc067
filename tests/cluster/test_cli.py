"""Manual control through the CLI, as `modelgate` and as the kubectl plugin `kubectl modelrollout`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from kubernetes import client

from modelgate.api import Phase
from testbed.binaries import binary
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.cli import modelgate
from tests.support.scenario import serving


def test_status_promote_abort_and_retry(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    kubeconfig = operator.kubeconfig
    steps = [{"setWeight": 20}, {"pause": {}}, {"setWeight": 50}, {"pause": {}}]
    manifest = model_rollout(
        "chat",
        namespace,
        steps=steps,
        prometheus=local_bed.prometheus_url,
        metrics=SEED_METRICS,
        interval="1s",
    )
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)
        scenario.wait_for_status(
            "the first pause", lambda s: s.phase is Phase.PAUSED and s.current_step_index == 1
        )
        scenario.wait_for_status("an analysis", lambda s: bool(s.analysis))

        shown = modelgate(kubeconfig, "status", "chat", "-n", namespace)
        assert shown.returncode == 0, shown.stderr
        for expected in (
            "Paused",
            "1/4 completed; now: pause (until promote)",
            "chat-v1 80% / chat-v2 20%",
            "80 / 20",
            "error-rate",
            "<= 0.01",
            "Pass",
        ):
            assert expected in shown.stdout, f"{expected!r} not in:\n{shown.stdout}"

        promoted = modelgate(kubeconfig, "promote", "chat", "-n", namespace)
        assert promoted.returncode == 0, promoted.stdout + promoted.stderr
        scenario.wait_for_status(
            "the second pause", lambda s: s.phase is Phase.PAUSED and s.current_step_index == 3
        )
        assert scenario.status().current_weight == 50

        aborted = modelgate(kubeconfig, "abort", "chat", "-n", namespace)
        assert aborted.returncode == 0, aborted.stdout + aborted.stderr
        rolled_back = scenario.wait_for_status("the abort", lambda s: s.phase is Phase.ROLLED_BACK)
        assert rolled_back.rollback_reason is not None
        assert "abort" in rolled_back.rollback_reason.message
        annotations = scenario.rollout()["metadata"].get("annotations") or {}
        assert "modelgate.io/command" not in annotations  # handled commands are cleared

        ignored = modelgate(kubeconfig, "resume", "chat", "-n", namespace)
        assert ignored.returncode == 4, ignored.stdout + ignored.stderr
        assert "resume ignored: `modelgate resume` does not apply in phase RolledBack" in ignored.stdout

        retried = modelgate(kubeconfig, "retry", "chat", "-n", namespace)
        assert retried.returncode == 0, retried.stdout + retried.stderr
        again = scenario.wait_for_status("the retry's first pause", lambda s: s.phase is Phase.PAUSED)
        assert again.rollback_reason is None
        full = modelgate(kubeconfig, "promote", "--full", "chat", "-n", namespace)
        assert full.returncode == 0, full.stdout + full.stderr
        scenario.wait_for_status("success", lambda s: s.phase is Phase.SUCCEEDED)
        assert scenario.recorder.candidate_weights() == [0, 20, 50, 0, 20, 100]

        listed = modelgate(kubeconfig, "get", "-A")
        assert listed.returncode == 0, listed.stderr
        assert namespace in listed.stdout and "Succeeded" in listed.stdout
        # --watch ends by itself once every rollout in the namespace has finished.
        watched = modelgate(kubeconfig, "status", "--watch", "-n", namespace)
        assert watched.returncode == 0, watched.stderr
        assert "step 4/4" in watched.stdout and "candidate 100%" in watched.stdout
        history = modelgate(kubeconfig, "history", "chat", "-n", namespace)
        assert history.returncode == 0, history.stderr
        for reason in ("NewRollout", "Aborted", "RolledBack", "Retry", "Promoted", "RolloutSucceeded"):
            assert reason in history.stdout, f"{reason} not in:\n{history.stdout}"
        assert "Recent analysis" in history.stdout


def test_unknown_rollout_is_a_clear_error(operator: OperatorProcess, namespace: str) -> None:
    shown = modelgate(operator.kubeconfig, "status", "nothing-here", "-n", namespace)
    assert shown.returncode == 1
    assert f"ModelRollout {namespace}/nothing-here not found" in shown.stdout


def test_kubectl_finds_the_plugin(operator: OperatorProcess, namespace: str, tmp_path: Path) -> None:
    plugin = shutil.which("kubectl-modelrollout", path=str(Path(sys.executable).parent))
    assert plugin is not None, "kubectl-modelrollout is installed with the package"
    env = {**os.environ, "PATH": f"{Path(plugin).parent}:{os.environ.get('PATH', '')}", "COLUMNS": "200"}
    result = subprocess.run(
        [
            str(binary("kubectl")),
            "modelrollout",
            "status",
            "nothing-here",
            "-n",
            namespace,
            f"--kubeconfig={operator.kubeconfig}",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert f"ModelRollout {namespace}/nothing-here not found" in result.stdout, result.stdout + result.stderr
