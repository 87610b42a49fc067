"""`make release-check` (tooling/release_check.py) on a copy of the repository: a version that
disagrees stops it before anything is built; the image builder's detection is checked with
stand-in builders on PATH. The whole run, every artifact built and installed, is a long one:
bench/test_release_check.py (and `.ci/run` runs `make release-check`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from testbed import binaries
from testbed.versions import REPO_ROOT
from tests.unit.test_release_names import tracked_files
from tooling.release_check import (
    Release,
    build_image,
    kubectl_plugin_lookup,
    unusable_builder,
)
from tooling.release_versions import project_version

VERSION = project_version(REPO_ROOT)


def repository_copy(destination: Path) -> Path:
    for path in tracked_files():
        target = destination / path.relative_to(REPO_ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    return destination


def run_release_check(root: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tooling.release_check", "--out", str(out), "--no-image"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )


def test_a_version_that_disagrees_stops_it_before_anything_is_built(tmp_path: Path) -> None:
    root = repository_copy(tmp_path / "repo")
    chart = root / "charts" / "modelgate" / "Chart.yaml"
    chart.write_text(chart.read_text().replace(f"version: {VERSION}", "version: 9.9.9"))
    out = tmp_path / "dist"
    result = run_release_check(root, out)
    assert result.returncode == 1
    assert "versions FAILED" in result.stderr and "Chart.yaml version is '9.9.9'" in result.stderr
    assert not (out / "python").exists()


def stand_in(folder: Path, name: str, failing: str | None = None) -> None:
    """An executable `name` that exits 1 when its first argument is `failing`, else 0."""
    script = folder / name
    script.write_text(f'#!/bin/sh\n[ "$1" = "{failing}" ] && exit 1\nexit 0\n')
    script.chmod(0o755)


@pytest.fixture
def bare_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH of stand-in programs only (sh for them to run)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "sh").symlink_to(shutil.which("sh") or "/bin/sh")
    monkeypatch.setenv("PATH", str(folder))
    return folder


def test_without_a_builder_the_image_is_skipped_saying_why_for_each(bare_path: Path) -> None:
    stand_in(bare_path, "docker", failing="buildx")
    said = build_image(Release(REPO_ROOT, REPO_ROOT / "dist", VERSION))
    assert said.startswith("skipped, no container builder here:")
    assert "docker is on PATH but has no buildx" in said
    assert "podman is not on PATH" in said and "buildah is not on PATH" in said


def test_docker_whose_daemon_does_not_answer_is_no_builder(bare_path: Path) -> None:
    stand_in(bare_path, "docker", failing="info")
    assert unusable_builder("docker") == (
        "docker is on PATH but has no daemon that answers (`docker info` failed)"
    )
    stand_in(bare_path, "docker")
    assert unusable_builder("docker") is None


def test_without_any_kubectl_the_plugin_lookup_is_not_tried_and_says_so(
    bare_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(binaries, "CACHE", tmp_path / "empty-cache")
    said = kubectl_plugin_lookup(tmp_path / "venv")
    assert said == "`kubectl modelrollout` not tried: no kubectl here (`make bins` builds one)"
