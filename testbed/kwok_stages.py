"""kwok's own stage files (how fake nodes and pods move through their lifecycle), taken from the
kwok module at the pinned version by following its `fast` kustomization."""

from __future__ import annotations

from pathlib import Path

import yaml

from testbed.gomodules import module_dir


def _kustomization_files(directory: Path) -> list[Path]:
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text())
    files: list[Path] = []
    for resource in kustomization.get("resources", []):
        target = (directory / resource).resolve()
        files.extend(_kustomization_files(target) if target.is_dir() else [target])
    return files


def write_stages(destination: Path, kwok_version: str) -> Path:
    stage_root = module_dir("sigs.k8s.io/kwok", kwok_version) / "kustomize" / "stage" / "fast"
    documents = [path.read_text().strip() for path in _kustomization_files(stage_root)]
    destination.write_text("\n---\n".join(documents) + "\n")
    return destination
