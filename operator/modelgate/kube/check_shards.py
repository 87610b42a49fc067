"""A parallel evaluator check as an Indexed Job: a Pod's index, and its shards added up.

A parallel evaluator check (spec.gate.checks[].parallelism) runs as an Indexed Job: which index a
Pod is, and the result of the shards' termination messages added up. Pure: no client calls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from modelgate.api.errors import InvalidSpecError
from modelgate.api.gate_shard import COMPLETION_INDEX_ANNOTATION, COMPLETION_INDEX_ENV, ShardResult
from modelgate.core.gate_judgement import CheckFailed, CheckMeasured, CheckObservation
from modelgate.core.gate_scores import ShardsDisagree, merged_result

# The variable the Job controller adds to every container of an Indexed Job's Pods: from the Pod's
# index label since Kubernetes 1.28, from its annotation before.
INJECTED_INDEX_ENV = tuple(
    {
        "name": COMPLETION_INDEX_ENV,
        "valueFrom": {
            "fieldRef": {"apiVersion": "v1", "fieldPath": f"metadata.{kind}['{COMPLETION_INDEX_ANNOTATION}']"}
        },
    }
    for kind in ("labels", "annotations")
)


def indexed(spec: dict[str, Any], shards: int) -> dict[str, Any]:
    """A Job's spec run as `shards` Pods at once, one per completion index; one failed Pod fails the
    Job (its backoffLimit 0 counts every index), and the Job controller stops the others."""
    if shards == 1:
        return spec
    return {**spec, "completionMode": "Indexed", "completions": shards, "parallelism": shards}


def without_injected_index(env: list[Mapping[str, Any]] | None) -> list[Mapping[str, Any]]:
    """A Pod's container environment as its Job's template has it: without the index variable the
    Job controller adds (the same entry for every Pod, so a Pod cannot pass off other settings)."""
    return [e for e in env or [] if e not in INJECTED_INDEX_ENV]


def pod_index(pod: Mapping[str, Any]) -> int | None:
    """The completion index the Job controller gave the Pod (in an annotation, and a label of the same
    name); None for a Pod of a Job not Indexed."""
    value = (pod["metadata"].get("annotations") or {}).get(COMPLETION_INDEX_ANNOTATION)
    return int(value) if isinstance(value, str) and value.isdigit() else None


def shard_name(pod: Mapping[str, Any], shards: int) -> str:
    """How a message names the Pod: its shard where the check has several."""
    if shards == 1:
        return "its container"
    return f"its shard {pod_index(pod)} of {shards} (Pod {pod['metadata'].get('name')})"


def merged_shards(messages: Mapping[int, str], shards: int) -> CheckObservation:
    """The check's result from what each index's succeeded Pod wrote (`messages`, by index): a
    missing or malformed shard, or shards that are not of one run, fail the check naming the index."""
    results = []
    for index in range(shards):
        message = messages.get(index)
        if message is None:
            return CheckFailed(f"its shard {index} of {shards}: no Pod of its own ended with exit code 0")
        try:
            results.append(ShardResult.model_validate_json(message))
        except ValidationError as error:
            problems = InvalidSpecError.from_validation_error(error, root="shard").problems
            return CheckFailed(
                f"its shard {index} of {shards} wrote malformed counts: " + "; ".join(problems)
            )
    try:
        pointers = tuple(shard.results_url for shard in results if shard.results_url is not None)
        return CheckMeasured(merged_result(results), pointers)
    except ShardsDisagree as error:
        return CheckFailed(f"its {shards} shards are not of one run: {error}")
