"""The kubelet of the gate's check Pods: kwok runs no containers (and leaves these Pods alone,
testbed/kwok_stages.py), so for each check Pod scheduled in a namespace the bed runs its container's
command as a local process, as the fleet runs doubles for model Pods, and writes the Pod's status as
a kubelet would. The real Job controller then completes or fails the Job, and enforces its deadline.

- The command runs only for images the bed knows (BED_IMAGES); `modelgate` is the operator's own
  CLI and `python` this interpreter. Another image cannot start: the Pod waits in ErrImagePull.
- A variable from a Secret (`secretKeyRef`) gets its value; a missing Secret or key that is not
  optional leaves the Pod waiting in CreateContainerConfigError, as the kubelet does.
- The container's view of the world is translated: Service URLs to the doubles' addresses on
  127.0.0.1 (`services`), ConfigMap volumes to files, the termination message path to a file whose
  content becomes `state.terminated.message` (at most 4096 bytes, as the kubelet keeps).
- A Pod being deleted (the Job's deadline) has its process ended.
"""

from __future__ import annotations

import base64
import re
import subprocess
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from kubernetes import client

from modelgate.api.gate_result import TERMINATION_MESSAGE_LIMIT
from modelgate.kube.checks import CHECK_LABEL
from testbed.processes import MODELGATE_ENTRY, fork_server, python_module_env

# The operator's image in the bed (its evaluator Jobs run it: MODELGATE_EVALUATOR_IMAGE), and one
# standing for a team's own check image.
BED_EVALUATOR_IMAGE = "modelgate/modelgate:bed"
BED_CHECK_IMAGE = "modelgate/check-script:bed"
BED_IMAGES = (BED_EVALUATOR_IMAGE, BED_CHECK_IMAGE)
# The custom check images the bed's operator allows (full-match patterns): its check script, and a
# registry that has nothing, for checks whose image cannot be pulled.
BED_CHECK_IMAGES = [re.escape(BED_CHECK_IMAGE), r"registry\.invalid/.*"]
POLL_SECONDS = 0.2


def local_command(words: list[str]) -> list[str]:
    """A container's command line as this machine runs it (but `modelgate`, which is forked)."""
    first, rest = words[0], words[1:]
    if first in ("python", "python3"):
        return [sys.executable, *rest]
    return words


def run_command(words: list[str], env: dict[str, str], directory: Path) -> Process:
    """The container's command started in `directory`, its output in `output.log` there. The
    operator's own CLI is forked from this process's fork server: its imports cost a second of CPU at
    each of the suite's gate runs."""
    output = directory / "output.log"
    if words[0] == "modelgate":
        server = fork_server(MODELGATE_ENTRY.partition(":")[0])
        return server.start(MODELGATE_ENTRY, words[1:], output, env, cwd=directory)
    with output.open("ab") as log:
        return subprocess.Popen(
            local_command(words),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**python_module_env(), **env},
            cwd=directory,
        )


def translated(text: str, replacements: Mapping[str, str]) -> str:
    for old, new in replacements.items():
        text = text.replace(old, new)
    return text


_ANNOTATION_OR_LABEL = re.compile(r"^metadata\.(annotations|labels)\['([^']+)'\]$")


def downward(variable: Any, pod: Any) -> str | None:
    """A variable's value from the Pod's own annotations or labels, as the kubelet resolves a fieldRef
    (an Indexed Job's JOB_COMPLETION_INDEX); None for a variable set otherwise."""
    field_ref = variable.value_from.field_ref if variable.value_from else None
    match = _ANNOTATION_OR_LABEL.match(field_ref.field_path) if field_ref else None
    if match is None:
        return None
    kind, key = match.groups()
    return str((getattr(pod.metadata, kind) or {}).get(key, ""))


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Process(Protocol):
    def poll(self) -> int | None: ...
    def kill(self) -> None: ...
    def wait(self, timeout: float | None = None) -> int: ...


@dataclass
class _Run:
    process: Process
    result_file: Path
    started_at: str


@dataclass
class CheckPods:
    """Runs the check Pods of one namespace while entered."""

    api_client: client.ApiClient
    namespace: str
    workdir: Path
    services: Mapping[str, str] = field(
        default_factory=dict
    )  # "http://svc.ns.svc:8000" -> "http://127.0.0.1:p"
    _runs: dict[str, _Run] = field(default_factory=dict)  # by Pod uid
    _handled: set[str] = field(default_factory=set)  # Pods whose status is final
    # What each check's Pod wrote to its termination message (the result the operator reads), by
    # the Pod's check label; the Pods themselves go once the gate has decided.
    termination_messages: dict[str, str] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    failure: Exception | None = None

    def __enter__(self) -> CheckPods:
        self.core = client.CoreV1Api(self.api_client)
        self._thread = threading.Thread(target=self._loop, daemon=True, name="check-pods")
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        for run in self._runs.values():
            if run.process.poll() is None:
                run.process.kill()
                run.process.wait()

    def _loop(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            try:
                self._sync()
            except Exception as error:  # kept for the test to see; the loop goes on
                self.failure = error

    def _sync(self) -> None:
        pods: list[Any] = self.core.list_namespaced_pod(
            self.namespace, label_selector=CHECK_LABEL, _request_timeout=10
        ).items
        for pod in pods:
            uid = pod.metadata.uid
            run = self._runs.get(uid)
            if pod.metadata.deletion_timestamp is not None:
                if run is not None and run.process.poll() is None:
                    run.process.kill()
                continue
            if uid in self._handled or not pod.spec.node_name:
                continue
            if run is None:
                self._start(pod)
            elif (code := run.process.poll()) is not None:
                self._finish(pod, run, code)

    def _start(self, pod: Any) -> None:
        container = pod.spec.containers[0]
        uid = pod.metadata.uid
        if container.image not in BED_IMAGES:
            message = f'failed to pull image "{container.image}": not found in the bed\'s images'
            state = {"waiting": {"reason": "ErrImagePull", "message": message}}
            self._write(pod, "Pending", state, ready=False)
            self._handled.add(uid)
            return
        directory = self.workdir / uid
        directory.mkdir(parents=True)
        result_file = directory / "termination-log"
        replacements = {container.termination_message_path or "/dev/termination-log": str(result_file)}
        replacements.update(self._volumes(pod, directory))
        replacements.update(self.services)
        words = [translated(w, replacements) for w in [*(container.command or []), *(container.args or [])]]
        env = self._environment(container, pod, replacements)
        if isinstance(env, str):
            self._write(
                pod,
                "Pending",
                {"waiting": {"reason": "CreateContainerConfigError", "message": env}},
                ready=False,
            )
            self._handled.add(uid)
            return
        process = run_command(words, {**env, "PATH": "/usr/bin:/bin", "HOME": str(directory)}, directory)
        started = _now()
        self._runs[uid] = _Run(process, result_file, started)
        self._write(pod, "Running", {"running": {"startedAt": started}}, ready=True)

    def _environment(self, container: Any, pod: Any, replacements: Mapping[str, str]) -> dict[str, str] | str:
        """The container's variables, a Secret's values by `secretKeyRef` and the Pod's own labels or
        annotations by `fieldRef` as the kubelet gives them; what the kubelet says when a Secret or a
        key that is not optional is missing."""
        env: dict[str, str] = {}
        for variable in container.env or []:
            reference = variable.value_from.secret_key_ref if variable.value_from else None
            if reference is None:
                env[variable.name] = translated(downward(variable, pod) or variable.value or "", replacements)
                continue
            try:
                data = self.core.read_namespaced_secret(reference.name, self.namespace).data or {}
            except client.ApiException as error:
                if error.status != 404:
                    raise
                data = None
            if data is None or reference.key not in data:
                if reference.optional:
                    continue
                missing = f'secret "{reference.name}" not found'
                return (
                    missing
                    if data is None
                    else f"couldn't find key {reference.key} in Secret {reference.name}"
                )
            env[variable.name] = base64.b64decode(data[reference.key]).decode()
        return env

    def _volumes(self, pod: Any, directory: Path) -> dict[str, str]:
        """Each ConfigMap volume as files in a folder, by the container's mount path."""
        mounts = {m.name: m.mount_path for m in pod.spec.containers[0].volume_mounts or []}
        replacements = {}
        for volume in pod.spec.volumes or []:
            if volume.config_map is None or volume.name not in mounts:
                continue
            folder = directory / "volumes" / volume.name
            folder.mkdir(parents=True)
            data = self.core.read_namespaced_config_map(volume.config_map.name, self.namespace).data or {}
            for item in volume.config_map.items or [client.V1KeyToPath(key=k, path=k) for k in data]:
                (folder / item.path).write_text(data[item.key])
            replacements[mounts[volume.name]] = str(folder)
        return replacements

    def _finish(self, pod: Any, run: _Run, code: int) -> None:
        message = (
            run.result_file.read_bytes()[:TERMINATION_MESSAGE_LIMIT].decode(errors="ignore")
            if (run.result_file.exists())
            else ""
        )
        terminated = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "message": message,
            "startedAt": run.started_at,
            "finishedAt": _now(),
        }
        self._write(pod, "Succeeded" if code == 0 else "Failed", {"terminated": terminated}, ready=False)
        self.termination_messages[pod.metadata.labels[CHECK_LABEL]] = message
        self._handled.add(pod.metadata.uid)

    def _write(self, pod: Any, phase: str, state: dict[str, Any], *, ready: bool) -> None:
        container = pod.spec.containers[0]
        now = _now()
        conditions = [
            {"type": kind, "status": str(ready or kind == "PodScheduled"), "lastTransitionTime": now}
            for kind in ("PodScheduled", "Ready", "ContainersReady")
        ]
        status = {
            "phase": phase,
            "startTime": (
                pod.status.start_time.strftime("%Y-%m-%dT%H:%M:%SZ") if pod.status.start_time else now
            ),
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
                *conditions,
            ],
            "containerStatuses": [
                {
                    "name": container.name,
                    "image": container.image,
                    "imageID": "",
                    "ready": ready,
                    "restartCount": 0,
                    "started": ready,
                    "state": state,
                }
            ],
        }
        try:
            self.core.patch_namespaced_pod_status(pod.metadata.name, self.namespace, {"status": status})
        except client.ApiException as error:
            # Deleted since the list (its Job ended, a failed shard ended the check): as a kubelet,
            # nothing is left to report on.
            if error.status != 404:
                raise
