"""Manual control through the CLI, as `modelgate` and as the kubectl plugin `kubectl modelrollout`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import ModelRolloutStatus, Phase
from modelgate.api.status import SHORT_MESSAGE
from modelgate.cli.exit_codes import ExitCode
from modelgate.commands import SKIP_RECONCILE_ANNOTATION
from testbed.binaries import binary
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.cli import modelgate
from tests.support.kube import scratch_namespace
from tests.support.scenario import Scenario, serving

STEPS = [{"setWeight": 20}, {"pause": {}}, {"setWeight": 50}, {"pause": {}}]


@dataclass(frozen=True)
class Walk:
    """One rollout per module, steered through the CLI; serving it is the expensive part."""

    scenario: Scenario
    kubeconfig: Path

    @property
    def namespace(self) -> str:
        return self.scenario.namespace

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        return modelgate(self.kubeconfig, *args, "-n", self.namespace)

    def steer(
        self, *args: str, until: str, reached: Callable[[ModelRolloutStatus], bool]
    ) -> ModelRolloutStatus:
        """Runs a steering command that must succeed, then waits for the rollout to show its effect."""
        done = self.cli(*args)
        if done.returncode != 0:
            pytest.fail(f"modelgate {' '.join(args)} exited {done.returncode}: {done.stdout}{done.stderr}")
        return self.scenario.wait_for_status(until, reached)


@dataclass(frozen=True)
class Stage:
    """The rollout where a step of the walk left it, read right then (later steps change it)."""

    status: ModelRolloutStatus
    rollout: dict[str, Any]


def paused_at(step_index: int) -> Callable[[ModelRolloutStatus], bool]:
    return lambda s: s.phase is Phase.PAUSED and s.current_step_index == step_index


# The walk's fixtures follow the rollout in order, each from the one before; the state a test
# checks is captured when the walk passes it, so the tests only read and may run in any order.


@pytest.fixture(scope="module")
def walk(local_bed: LocalCluster, api_client: client.ApiClient, operator: OperatorProcess) -> Iterator[Walk]:
    with (
        scratch_namespace(api_client) as namespace,
        serving(local_bed, api_client, namespace, Behaviour()) as scenario,
    ):
        scenario.apply(
            model_rollout(
                "chat",
                namespace,
                steps=STEPS,
                prometheus=local_bed.prometheus_url,
                metrics=SEED_METRICS,
                interval="1s",
            )
        )
        yield Walk(scenario, operator.kubeconfig)


@pytest.fixture(scope="module")
def status_at_first_pause(walk: Walk) -> subprocess.CompletedProcess[str]:
    walk.scenario.wait_for_status("the first pause", paused_at(1))
    walk.scenario.wait_for_status("an analysis", lambda s: bool(s.analysis))
    return walk.cli("status", "chat")


@pytest.fixture(scope="module")
def promoted(walk: Walk, status_at_first_pause: subprocess.CompletedProcess[str]) -> ModelRolloutStatus:
    return walk.steer("promote", "chat", until="the second pause", reached=paused_at(3))


@pytest.fixture(scope="module")
def aborted(walk: Walk, promoted: ModelRolloutStatus) -> Stage:
    status = walk.steer("abort", "chat", until="the abort", reached=lambda s: s.phase is Phase.ROLLED_BACK)
    return Stage(status, walk.scenario.rollout())


@pytest.fixture(scope="module")
def resume_after_abort(walk: Walk, aborted: Stage) -> subprocess.CompletedProcess[str]:
    return walk.cli("resume", "chat")


@pytest.fixture(scope="module")
def retried(walk: Walk, resume_after_abort: subprocess.CompletedProcess[str]) -> ModelRolloutStatus:
    return walk.steer("retry", "chat", until="the retry's first pause", reached=paused_at(1))


@pytest.fixture(scope="module")
def succeeded(walk: Walk, retried: ModelRolloutStatus) -> Walk:
    walk.steer("promote", "--full", "chat", until="success", reached=lambda s: s.phase is Phase.SUCCEEDED)
    return walk


def test_status_shows_phase_progress_weights_and_analysis(
    status_at_first_pause: subprocess.CompletedProcess[str],
) -> None:
    shown = status_at_first_pause
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


def test_promote_moves_on_to_the_next_step(promoted: ModelRolloutStatus) -> None:
    # From the pause at index 1 through setWeight 50 to the pause at index 3.
    assert promoted.current_weight == 50


def test_abort_rolls_back_saying_why(aborted: Stage) -> None:
    assert aborted.status.current_weight == 0
    assert aborted.status.rollback_reason is not None
    assert "abort" in aborted.status.rollback_reason.message


def test_a_handled_command_is_cleared(aborted: Stage) -> None:
    annotations = aborted.rollout["metadata"].get("annotations") or {}
    assert "modelgate.io/command" not in annotations


def test_resume_after_a_rollback_is_ignored_with_a_reason(
    resume_after_abort: subprocess.CompletedProcess[str],
) -> None:
    ignored = resume_after_abort
    assert ignored.returncode == 4, ignored.stdout + ignored.stderr
    assert "resume ignored: `modelgate resume` does not apply in phase RolledBack" in ignored.stdout


def test_retry_starts_the_rollout_over(retried: ModelRolloutStatus) -> None:
    assert retried.rollback_reason is None
    assert retried.current_weight == 20


def test_full_promotion_skips_the_remaining_steps(succeeded: Walk) -> None:
    # The first attempt 20 -> 50, the abort to 0, the retry's 20, then --full straight to 100.
    assert succeeded.scenario.recorder.candidate_weights() == [0, 20, 50, 0, 20, 100]


def test_get_lists_the_rollout_with_its_phase_across_namespaces(succeeded: Walk) -> None:
    listed = modelgate(succeeded.kubeconfig, "get", "-A")
    assert listed.returncode == 0, listed.stderr
    rows = [line for line in listed.stdout.splitlines() if succeeded.namespace in line]
    assert len(rows) == 1, listed.stdout
    assert "chat" in rows[0] and "Succeeded" in rows[0], rows[0]


def test_status_watch_ends_once_every_rollout_has_finished(succeeded: Walk) -> None:
    watched = succeeded.cli("status", "--watch", "--timeout", "5m")
    assert watched.returncode == ExitCode.OK, watched.stderr
    assert "step 4/4" in watched.stdout and "candidate 100%" in watched.stdout


def test_history_tells_every_transition_and_the_recent_analysis(succeeded: Walk) -> None:
    history = succeeded.cli("history", "chat")
    assert history.returncode == 0, history.stderr
    for reason in ("NewRollout", "Aborted", "RolledBack", "Retry", "Promoted", "RolloutSucceeded"):
        assert reason in history.stdout, f"{reason} not in:\n{history.stdout}"
    assert "Recent analysis" in history.stdout


def test_unknown_rollout_is_a_clear_error(operator: OperatorProcess, namespace: str) -> None:
    shown = modelgate(operator.kubeconfig, "status", "nothing-here", "-n", namespace)
    assert shown.returncode == 1
    assert f"ModelRollout {namespace}/nothing-here not found" in shown.stdout


def test_a_rollout_whose_stored_status_cannot_be_read_is_a_clear_error(
    operator: OperatorProcess, api_client: client.ApiClient, namespace: str
) -> None:
    """The API server's schema takes any date-time; the models refuse one no duration can be added to.
    The operator leaves the rollout alone (skip-reconcile), so the status stays as written."""
    manifest = model_rollout("unreadable", namespace, steps=[{"setWeight": 10}])
    manifest["metadata"]["annotations"] = {SKIP_RECONCILE_ANNOTATION: "true"}
    objects = client.CustomObjectsApi(api_client)
    objects.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, manifest)
    objects.patch_namespaced_custom_object_status(
        API_GROUP,
        API_VERSION,
        namespace,
        PLURAL,
        "unreadable",
        {"status": {"phase": "Progressing", "stepStartedAt": "9999-12-31T23:59:59Z"}},
    )
    shown = modelgate(operator.kubeconfig, "status", "unreadable", "-n", namespace)
    assert shown.returncode == 1, shown.stdout + shown.stderr
    assert "status.stepStartedAt" in shown.stderr
    assert "Traceback" not in shown.stderr


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


def test_kubectl_gets_a_bounded_message(
    operator: OperatorProcess, api_client: client.ApiClient, namespace: str
) -> None:
    """The API server keeps status.shortMessage (the schema has it) and `kubectl get` shows it in
    its Message column, however long the message is."""
    manifest = model_rollout("wordy", namespace, steps=[{"setWeight": 10}])
    manifest["metadata"]["annotations"] = {SKIP_RECONCILE_ANNOTATION: "true"}
    objects = client.CustomObjectsApi(api_client)
    objects.create_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, manifest)
    message = "step 0: waiting for weight 10 to be live: " + "the route answered 409; " * 40
    status = ModelRolloutStatus(phase=Phase.PROGRESSING, message=message).to_patch()
    objects.patch_namespaced_custom_object_status(
        API_GROUP, API_VERSION, namespace, PLURAL, "wordy", {"status": status}
    )
    listed = subprocess.run(
        [
            str(binary("kubectl")),
            "get",
            PLURAL,
            "wordy",
            "-n",
            namespace,
            f"--kubeconfig={operator.kubeconfig}",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    header, row = listed.stdout.splitlines()
    shown = row[header.index("MESSAGE") :]
    assert shown.startswith("step 0: waiting for weight 10") and len(shown) <= SHORT_MESSAGE, shown
