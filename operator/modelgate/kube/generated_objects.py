"""The objects a one-edit rollout (spec.candidatePatch) generates, built from the incumbent's.

The candidate Deployment is the incumbent's with the patch applied to one container; its Pods keep
the incumbent's labels but for those the incumbent's Deployment and Service select on, which take the
candidate's name, so that neither selects them. Its Service is the incumbent's backend Service
selecting the candidate's Pods. Both carry the rollout as their owner and no label or annotation of
the incumbent's object itself (so none of an Argo CD application's tracking).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from modelgate import API_GROUP, API_VERSION
from modelgate.api.candidate_patch import CandidatePatch
from modelgate.kube.labels import ROLLOUT_LABEL, label_value

GENERATED_LABEL = "modelgate.io/generated-candidate"  # on the objects generated and the candidate's Pods
MODEL_FLAG = "--model"


def owner_reference(rollout: Mapping[str, Any]) -> dict[str, Any]:
    """The rollout as the owner of what it generates: the garbage collector deletes them with it.
    blockOwnerDeletion stays False: it would need the right to update the rollout's finalizers."""
    meta = rollout["metadata"]
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "ModelRollout",
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": False,
    }


def owned_by(obj: Mapping[str, Any], uid: str) -> bool:
    return any(ref.get("uid") == uid for ref in obj.get("metadata", {}).get("ownerReferences") or [])


def with_model(args: Sequence[str], model: str) -> list[str]:
    """`args` with `--model <model>` (or `--model=<model>`) set, appended when absent."""
    out = list(args)
    for i, arg in enumerate(out):
        if arg == MODEL_FLAG and i + 1 < len(out):
            out[i + 1] = model
            return out
        if arg.startswith(MODEL_FLAG + "="):
            out[i] = f"{MODEL_FLAG}={model}"
            return out
    return [*out, MODEL_FLAG, model]


def patched_container(container: Mapping[str, Any], patch: CandidatePatch) -> dict[str, Any]:
    """The container with the patch applied; applying it again changes nothing."""
    out = dict(container)
    if patch.image is not None:
        out["image"] = patch.image
    if patch.args is not None:
        out["args"] = list(patch.args)
    if patch.model is not None:
        out["args"] = with_model(out.get("args") or [], patch.model)
    if patch.env is not None:
        names = {variable.name for variable in patch.env}
        kept = [variable for variable in out.get("env") or [] if variable.get("name") not in names]
        out["env"] = kept + [{"name": variable.name, "value": variable.value} for variable in patch.env]
    return out


def container_index(template_spec: Mapping[str, Any], patch: CandidatePatch) -> int | str:
    """The index of the container the patch changes, or why there is none (naming the field)."""
    containers = template_spec.get("containers") or []
    if patch.container is None:
        return 0 if containers else "the incumbent's Pod template has no container"
    names = [container.get("name") for container in containers]
    if patch.container in names:
        return names.index(patch.container)
    return f"spec.candidatePatch.container: the incumbent has no container {patch.container} (it has {names})"


def carries_patch(deployment: Mapping[str, Any], patch: CandidatePatch) -> bool:
    """Whether the Deployment's Pod template has the patch applied already."""
    template_spec = deployment["spec"]["template"]["spec"]
    index = container_index(template_spec, patch)
    if isinstance(index, str):
        return False
    container: dict[str, Any] = template_spec["containers"][index]
    return patched_container(container, patch) == container


def patched_template_ops(deployment: Mapping[str, Any], patch: CandidatePatch) -> list[dict[str, Any]] | str:
    """A JSON patch giving the incumbent's Pod template the patch (PromoteIntoIncumbent), guarded by
    its resourceVersion; or why it cannot be made."""
    template_spec = deployment["spec"]["template"]["spec"]
    index = container_index(template_spec, patch)
    if isinstance(index, str):
        return index
    version = deployment["metadata"]["resourceVersion"]
    return [
        {"op": "test", "path": "/metadata/resourceVersion", "value": version},
        {
            "op": "replace",
            "path": f"/spec/template/spec/containers/{index}",
            "value": patched_container(template_spec["containers"][index], patch),
        },
    ]


def candidate_deployment(
    incumbent: Mapping[str, Any],
    service_selector: Mapping[str, str],
    patch: CandidatePatch,
    name: str,
    rollout: Mapping[str, Any],
) -> dict[str, Any] | str:
    """The candidate Deployment made from the incumbent (as read), or why it cannot be made."""
    spec = copy.deepcopy(dict(incumbent["spec"]))
    template = spec["template"]
    index = container_index(template["spec"], patch)
    if isinstance(index, str):
        return index
    template["spec"]["containers"][index] = patched_container(template["spec"]["containers"][index], patch)
    selected = set((spec.get("selector") or {}).get("matchLabels") or {}) | set(service_selector)
    labels = dict(template.get("metadata", {}).get("labels") or {})
    labels = {key: (name if key in selected else value) for key, value in labels.items()}
    labels.pop("pod-template-hash", None)
    template["metadata"] = {**template.get("metadata", {}), "labels": {**labels, GENERATED_LABEL: name}}
    spec["selector"] = {"matchLabels": {GENERATED_LABEL: name}}
    spec.pop("paused", None)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(name, incumbent["metadata"]["namespace"], rollout),
        "spec": spec,
    }


def candidate_service(
    incumbent_service: Mapping[str, Any], name: str, rollout: Mapping[str, Any]
) -> dict[str, Any]:
    """The incumbent's backend Service, selecting the candidate's Pods."""
    source = incumbent_service.get("spec") or {}
    ports = [{k: v for k, v in port.items() if k != "nodePort"} for port in source.get("ports") or []]
    spec: dict[str, Any] = {"ports": ports, "selector": {GENERATED_LABEL: name}}
    for kept in ("ipFamilyPolicy", "ipFamilies", "sessionAffinity", "publishNotReadyAddresses"):
        if kept in source:
            spec[kept] = source[kept]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(name, incumbent_service["metadata"]["namespace"], rollout),
        "spec": spec,
    }


def _metadata(name: str, namespace: str, rollout: Mapping[str, Any]) -> dict[str, Any]:
    labels = {GENERATED_LABEL: name, ROLLOUT_LABEL: label_value(rollout["metadata"]["name"])}
    return {
        "name": name,
        "namespace": namespace,
        "labels": labels,
        "ownerReferences": [owner_reference(rollout)],
    }
