"""`make release-check` end to end (tooling/release_check.py) on a copy of the repository: the
wheel and sdist build offline, the wheel installs into a fresh venv from the lock and its commands
run (`kubectl modelrollout` too), the stamped chart packages, lints and renders its image, the
notes come from CHANGELOG.md. Half a minute, most of it the fresh venv: a long run, here rather
than in `make test` (`.ci/run` also runs `make release-check` after the suite)."""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml

from testbed.versions import REPO_ROOT
from tests.unit.test_release_check import VERSION, repository_copy, run_release_check
from tooling.release_check import CHECK_REPOSITORY_URL
from tooling.release_names import DISTRIBUTION
from tooling.release_notes import changelog_section

pytestmark = pytest.mark.bench


def test_release_check_builds_and_verifies_every_artifact(tmp_path: Path) -> None:
    root = repository_copy(tmp_path / "repo")
    out = tmp_path / "dist"
    result = run_release_check(root, out)
    assert result.returncode == 0, result.stdout + result.stderr
    steps = [line.split()[1] for line in result.stdout.splitlines()[:-1] if line.startswith("release-check:")]
    assert steps == ["versions", "python", "install", "chart", "notes", "image"]

    stem = f"{DISTRIBUTION.replace('-', '_')}-{VERSION}"
    with zipfile.ZipFile(out / "python" / f"{stem}-py3-none-any.whl") as wheel:
        metadata = wheel.read(f"{stem}.dist-info/METADATA").decode()
        entry_points = wheel.read(f"{stem}.dist-info/entry_points.txt").decode()
    assert f"Name: {DISTRIBUTION}\n" in metadata and f"Version: {VERSION}\n" in metadata
    assert "kubectl-modelrollout = modelgate.cli:main" in entry_points
    with tarfile.open(out / "python" / f"{stem}.tar.gz") as sdist:
        assert f"{stem}/operator/modelgate/cli/main.py" in sdist.getnames()

    with tarfile.open(out / f"modelgate-{VERSION}.tgz") as chart:
        extracted = chart.extractfile("modelgate/Chart.yaml")
        assert extracted is not None
        metadata_yaml = yaml.safe_load(extracted.read())
    assert metadata_yaml["home"] == CHECK_REPOSITORY_URL and metadata_yaml["version"] == VERSION

    notes = (out / "release-notes.md").read_text()
    section = changelog_section((REPO_ROOT / "CHANGELOG.md").read_text(), VERSION)
    assert notes.startswith(section.body) and f"--version {VERSION}" in notes
