"""kwok's own stage files (how fake nodes and pods move through their lifecycle), taken from the
kwok module at the pinned version by following its `fast` kustomization.

One change: kwok leaves the Pods of the gate's check Jobs alone until they are deleted. Its `fast`
stages would make such a Pod Running and then Succeeded at once, with no result; the bed runs each
one as a local process instead and writes its status as a kubelet would (testbed/check_pods.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from modelgate.kube.checks import CHECK_LABEL
from testbed.gomodules import module_dir

# The stages that would run a Pod: every one but its deletion.
RUNNING_STAGES = ("pod-ready", "pod-complete")


def _kustomization_files(directory: Path) -> list[Path]:
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    files: list[Path] = []
    for resource in kustomization.get("resources", []):
        target = (directory / resource).resolve()
        files.extend(_kustomization_files(target) if target.is_dir() else [target])
    return files


def leave_check_pods_alone(stage: dict[str, Any]) -> dict[str, Any]:
    """The stage, not applying to Pods labelled as gate checks when it is one that runs Pods."""
    if stage.get("kind") == "Stage" and stage["metadata"]["name"] in RUNNING_STAGES:
        expressions = stage["spec"]["selector"].setdefault("matchExpressions", [])
        expressions.append({"key": f'.metadata.labels["{CHECK_LABEL}"]', "operator": "DoesNotExist"})
    return stage


def write_stages(destination: Path, kwok_version: str) -> Path:
    stage_root = module_dir("sigs.k8s.io/kwok", kwok_version) / "kustomize" / "stage" / "fast"
    stages = [
        leave_check_pods_alone(yaml.safe_load(path.read_text())) for path in _kustomization_files(stage_root)
    ]
    destination.write_text(yaml.safe_dump_all(stages, sort_keys=False))
    return destination
