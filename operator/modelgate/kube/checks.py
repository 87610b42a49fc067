"""Pure helpers for the gate's check Jobs: the Job a check runs as, and what it says.

Pure helpers for the gate's check Jobs: the Job a check runs as, and what a Job and its Pods say
about the check (running, measured with a result, or failed and why). No client calls here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeGuard

from pydantic import ValidationError

from modelgate import API_GROUP, API_VERSION, KIND
from modelgate.api.errors import InvalidSpecError
from modelgate.api.gate import Evaluator, GateCheck
from modelgate.api.gate_inputs import JsonlSource
from modelgate.api.gate_result import NO_ANSWER_EXIT_CODE, GateResult, StoredData
from modelgate.core.gate_judgement import CheckFailed, CheckMeasured, CheckObservation, CheckRunning
from modelgate.kube.check_pod_identity import own_pods
from modelgate.kube.check_shards import indexed, merged_shards, pod_index, shard_name
from modelgate.kube.check_storage import ResultsTarget, recorded_replay, storage_wiring
from modelgate.kube.labels import ROLLOUT_LABEL, label_value

# Labels of a check's Job and Pods: which rollout and which check they belong to.
EVALUATION_LABEL = "modelgate.io/evaluation"  # a ModelEvaluation's run (api/evaluation_spec.py)
CHECK_LABEL = "modelgate.io/gate-check"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
# Istio injects no sidecar into a Pod labelled so: its check Pods must stay as their Job made them.
NO_SIDECAR_LABEL = "sidecar.istio.io/inject"
CONTAINER = "check"
TERMINATION_LOG = "/dev/termination-log"
DATA_DIR = "/var/run/modelgate/gate"
# The restricted Pod Security profile, for every check: no root, no privilege, no capability.
NON_ROOT_USER = 65532
POD_SECURITY_CONTEXT = {
    "runAsNonRoot": True,
    "runAsUser": NON_ROOT_USER,
    "runAsGroup": NON_ROOT_USER,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY_CONTEXT = {
    "runAsNonRoot": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
}
# The evaluator writes nothing but temporary files: its root filesystem is read-only.
SCRATCH = {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}
# Finished Jobs the operator did not delete itself (it was down) go after this.
FINISHED_TTL_SECONDS = 3600
# A container in one of these waiting states will not start by itself.
CONFIG_ERROR = "CreateContainerConfigError"  # a Secret or ConfigMap (or a key) it needs is missing
CANNOT_START = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "InvalidImageName",
        CONFIG_ERROR,
        "CreateContainerError",
    }
)


@dataclass(frozen=True)
class CheckTarget:
    """What the built-in evaluator talks to: each side's base URL and model name."""

    candidate_url: str
    incumbent_url: str
    candidate_model: str
    incumbent_model: str


def _mounted(
    source: JsonlSource, volume: str, field: str
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]]]:
    """Where the evaluator reads a JSONL source, and the volume and mount that put it there."""
    if source.url is not None:
        return source.url, [], []
    if source.s3 is not None:
        return source.s3.url, [], []
    directory = f"{DATA_DIR}/{volume}"
    mount = {"name": volume, "mountPath": directory, "readOnly": True}
    if source.config_map is not None:
        key = source.config_map.key
        volumes = [
            {
                "name": volume,
                "configMap": {"name": source.config_map.name, "items": [{"key": key, "path": key}]},
            }
        ]
        return f"{directory}/{key}", volumes, [mount]
    claim = source.persistent_volume_claim
    assert claim is not None, f"{field}: JsonlSource validates exactly one source"
    volumes = [{"name": volume, "persistentVolumeClaim": {"claimName": claim.claim_name, "readOnly": True}}]
    return f"{directory}/{claim.path}", volumes, [mount]


def _sources(
    evaluator: Evaluator, field: str
) -> tuple[list[str], list[dict[str, Any]], list[dict[str, Any]]]:
    """The evaluator's test set and replay arguments, and the volumes and mounts they read."""
    args: list[str] = []
    volumes: list[dict[str, Any]] = []
    mounts: list[dict[str, Any]] = []
    for flag, source, volume in (
        ("--test-set", evaluator.test_set, "test-set"),
        (
            "--replay",
            None if recorded_replay(evaluator) else evaluator.replay,
            "replay",
        ),  # recorded: a prefix
    ):
        if source is None:
            continue
        path, more_volumes, more_mounts = _mounted(source, volume, field)
        args.append(f"{flag}={path}")
        args += [f"--inputs-within={mount['mountPath']}" for mount in more_mounts]
        volumes += more_volumes
        mounts += more_mounts
    return args, volumes, mounts


def evaluator_container(
    check: GateCheck,
    target: CheckTarget,
    image: str,
    field: str,
    env: Mapping[str, str],
    results: ResultsTarget | None = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """`modelgate eval` as the contract (docs/gate-eval.md) has it, and the volumes it reads (each
    file confined to its mount); `env` holds the operator's egress policy. Storage credentials come
    from their Secrets by reference: the operator never reads them."""
    evaluator = check.evaluator
    assert evaluator is not None
    args = [
        "eval",
        f"--candidate={target.candidate_url}",
        f"--incumbent={target.incumbent_url}",
        f"--candidate-model={target.candidate_model}",
        f"--incumbent-model={target.incumbent_model}",
        f"--concurrency={evaluator.concurrency}",
        f"--timeout={evaluator.request_timeout}",
        f"--result-file={TERMINATION_LOG}",
    ]
    source_args, volumes, mounts = _sources(evaluator, f"{field}.evaluator")
    args += source_args
    if evaluator.replay is not None and evaluator.replay.sample is not None:
        args.append(f"--replay-sample={evaluator.replay.sample}")
    if evaluator.judge is not None:
        args += [f"--judge={evaluator.judge.url}", f"--judge-model={evaluator.judge.model}"]
        if evaluator.judge.samples is not None:
            args.append(f"--judge-samples={evaluator.judge.samples}")
    results_args, stored_env = storage_wiring(evaluator, results)
    args += results_args
    if check.parallelism > 1:
        args.append(f"--shards={check.parallelism}")
    container = {
        "name": CONTAINER,
        "image": image,
        "command": ["modelgate"],
        "args": args,
        "env": [
            *(
                {"name": name, "value": value}
                for name, value in sorted({**env, "PYTHONDONTWRITEBYTECODE": "1"}.items())
            ),
            *stored_env,
        ],
        "volumeMounts": [*mounts, {"name": SCRATCH["name"], "mountPath": "/tmp"}],
        "securityContext": {"readOnlyRootFilesystem": True},
    }
    return container, [*volumes, SCRATCH]


def check_job(
    rollout: Mapping[str, Any],
    check: GateCheck,
    job_name: str,
    container: Mapping[str, Any],
    volumes: Sequence[Mapping[str, Any]],
    resources: Mapping[str, Any],
    service_account: str | None = None,
    *,
    owner_kind: str = KIND,
    owner_label: str = ROLLOUT_LABEL,
) -> dict[str, Any]:
    """The Job of one check: owned by the rollout (or the ModelEvaluation: `owner_kind`), so
    garbage-collected with it, run once (no retries: a failure is the check's verdict), its deadline
    the check's timeout; Indexed, one Pod per shard, for a parallel check. Its Pods have no API token
    and run under the restricted Pod Security
    profile, with `resources`."""
    meta = rollout["metadata"]
    labels = {owner_label: label_value(meta["name"]), CHECK_LABEL: label_value(check.name)}
    account = {"serviceAccountName": service_account} if service_account else {}
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": job_name,
            "namespace": meta["namespace"],
            "labels": labels,
            "ownerReferences": [_owned_by(meta, owner_kind)],
        },
        "spec": {
            "backoffLimit": 0,
            "activeDeadlineSeconds": max(1, int(check.timeout_timedelta.total_seconds())),
            "ttlSecondsAfterFinished": FINISHED_TTL_SECONDS,
            "template": {
                # No mesh sidecar: a Pod with one injected would not be its Job's own (check_pod_identity).
                "metadata": {"labels": {**labels, NO_SIDECAR_LABEL: "false"}},
                "spec": {
                    "restartPolicy": "Never",
                    **account,
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "securityContext": POD_SECURITY_CONTEXT,
                    "containers": [_restricted(container, resources)],
                    "volumes": list(volumes),
                },
            },
        },
    }
    job["spec"] = indexed(job["spec"], check.parallelism)
    return job


def _owned_by(meta: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """The rollout (or evaluation) as the controller owner: the Job goes when it does."""
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": kind,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
    }


def _restricted(container: Mapping[str, Any], resources: Mapping[str, Any]) -> dict[str, Any]:
    """The check's container with `resources`, the restricted security context under the container's
    own settings, and its verdict read from the termination log."""
    return {
        **container,
        "resources": dict(resources),
        "securityContext": {**CONTAINER_SECURITY_CONTEXT, **(container.get("securityContext") or {})},
        "terminationMessagePath": TERMINATION_LOG,
        "terminationMessagePolicy": "File",
    }


def custom_container(check: GateCheck) -> dict[str, Any]:
    job = check.job
    assert job is not None
    container: dict[str, Any] = {"name": CONTAINER, "image": job.image}
    if job.command:
        container["command"] = list(job.command)
    if job.args:
        container["args"] = list(job.args)
    if job.env:
        container["env"] = [{"name": e.name, "value": e.value} for e in job.env]
    return container


def _condition(job: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    conditions = (job.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == type_ and c.get("status") == "True"), None)


def _container_state(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    status = next((s for s in statuses if s.get("name") == CONTAINER), None)
    return (status or {}).get("state") or {}


def parse_result(message: str) -> GateResult | str:
    """The GateResult a check wrote, or why it is not one, naming the field."""
    if not message.strip():
        return f"the check wrote no result to its termination message ({TERMINATION_LOG})"
    try:
        return GateResult.model_validate_json(message)
    except ValidationError as error:
        problems = InvalidSpecError.from_validation_error(error, root="result").problems
        return "its result JSON is malformed: " + "; ".join(problems)


def _counts_requests(said: GateResult | str) -> TypeGuard[GateResult]:
    return isinstance(said, GateResult) and said.requests is not None


def _measured(result: GateResult) -> CheckMeasured:
    return CheckMeasured(result, () if result.results_url is None else (result.results_url,))


def observe_job(
    job: Mapping[str, Any] | None,
    pods: Sequence[Mapping[str, Any]],
    timeout: str,
    shards: int = 1,
    secret_fields: Sequence[str] = (),
    stored_fields: Mapping[StoredData, str] = MappingProxyType({}),
) -> CheckObservation:
    """What a check's Job (None: not created yet) and its own Pods (`own_pods`) say; a parallel
    check's (`shards` Pods of an Indexed Job) names the shard that failed. A container whose
    configuration cannot be made (a Secret or key missing) names `secret_fields`: the fields of the
    spec that name the Secrets it reads; a store that failed names its field in `stored_fields`."""
    if job is None:
        return CheckRunning("starting its Job")
    pods = own_pods(job, pods)
    ended = [(pod, state["terminated"]) for pod in pods if "terminated" in (state := _container_state(pod))]
    if _condition(job, "Complete") is not None:
        succeeded = [(pod, t) for pod, t in ended if t.get("exitCode") == 0]
        if shards > 1:
            by_index = {pod_index(pod): str(t.get("message") or "") for pod, t in succeeded}
            return merged_shards({i: message for i, message in by_index.items() if i is not None}, shards)
        if not succeeded:
            return CheckFailed("its Job completed, but no Pod of its own ended with exit code 0")
        parsed = parse_result(str(succeeded[0][1].get("message") or ""))
        if not isinstance(parsed, GateResult):
            return CheckFailed(parsed)
        return _measured(parsed)
    failed = _condition(job, "Failed") or _condition(job, "FailureTarget")
    if failed is not None:
        if failed.get("reason") == "DeadlineExceeded":
            return CheckFailed(f"its Job ran past its deadline (timeout {timeout}) and was stopped")
        exited = next(((p, t) for p, t in ended if t.get("exitCode") not in (None, 0)), None)
        if exited is None:
            return CheckFailed(f"its Job failed ({failed.get('reason')}: {failed.get('message')})")
        pod, state = exited
        said = parse_result(str(state.get("message") or ""))
        if shards == 1 and state.get("exitCode") == NO_ANSWER_EXIT_CODE and _counts_requests(said):
            return _measured(said)  # a side answered nothing: judged (and failed) whatever onError
        detail = said.summary if isinstance(said, GateResult) and said.summary else None
        failed_store = said.storage_failure if isinstance(said, GateResult) else None
        if failed_store is not None and failed_store in stored_fields:
            detail = f"{detail}; the store is named by {stored_fields[failed_store]}"
        return CheckFailed(
            f"{shard_name(pod, shards)} exited with code {state.get('exitCode')}"
            + (f": {detail}" if detail else "")
        )
    for pod in pods:
        waiting = _container_state(pod).get("waiting") or {}
        if waiting.get("reason") in CANNOT_START:
            image = next(
                (c.get("image") for c in pod["spec"]["containers"] if c.get("name") == CONTAINER), "?"
            )
            detail = f": {waiting['message']}" if waiting.get("message") else ""
            if waiting.get("reason") == CONFIG_ERROR and secret_fields:
                detail += f"; the Secrets it reads are named by {', '.join(secret_fields)}"
            return CheckFailed(
                f"{shard_name(pod, shards)} cannot start ({waiting['reason']}, image {image}){detail}"
            )
    running = any((pod.get("status") or {}).get("phase") == "Running" for pod in pods)
    return CheckRunning(f"Job {job['metadata']['name']} " + ("running" if running else "waiting for its Pod"))
