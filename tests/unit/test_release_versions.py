"""The release's version check (tooling/release_versions.py): the tag and every place that states
the version agree, and a tagged release's CHANGELOG.md section is dated, or nothing is published."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from testbed.versions import REPO_ROOT
from tooling.release_versions import main, project_version, version_mismatches

VERSIONED = [
    "pyproject.toml",
    "charts/modelgate/Chart.yaml",
    "Dockerfile",
    "operator/modelgate/__init__.py",
    "CHANGELOG.md",
]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The files that state the version, copied as they are in the repository."""
    for relative in VERSIONED:
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / relative, tmp_path / relative)
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def _date_the_release(root: Path, version: str) -> None:
    changelog = root / "CHANGELOG.md"
    changelog.write_text(
        re.sub(
            rf"^## \[{re.escape(version)}\] - .*$",
            f"## [{version}] - 2027-01-15",
            changelog.read_text(),
            flags=re.M,
        )
    )


def test_the_repository_agrees_on_its_version_before_the_tag_is_dated() -> None:
    version = project_version(REPO_ROOT)
    assert version_mismatches(REPO_ROOT, f"v{version}", allow_undated=True) == []


def test_a_tagged_release_needs_the_changelog_date(root: Path) -> None:
    version = project_version(root)
    (problem,) = version_mismatches(root, f"v{version}", allow_undated=False)
    assert f"`## [{version}]` has no date" in problem
    _date_the_release(root, version)
    assert version_mismatches(root, f"v{version}", allow_undated=False) == []


def test_each_place_that_disagrees_with_the_tag_is_named(root: Path) -> None:
    version = project_version(root)
    _edit(root / "charts/modelgate/Chart.yaml", 'appVersion: "0.1.0"', 'appVersion: "0.1.1"')
    _edit(root / "operator/modelgate/__init__.py", f'__version__ = "{version}"', '__version__ = "0.0.9"')
    problems = version_mismatches(root, f"v{version}", allow_undated=True)
    assert len(problems) == 2
    assert "Chart.yaml appVersion is '0.1.1'" in problems[0]
    assert "__init__.py __version__ is '0.0.9'" in problems[1]


def test_a_tag_of_another_version_fails_on_every_file_and_the_changelog(root: Path) -> None:
    problems = version_mismatches(root, "v0.2.0", allow_undated=True)
    assert len(problems) == 6  # pyproject, Chart version and appVersion, Dockerfile, package, CHANGELOG
    assert "no section `## [0.2.0]`" in problems[-1]


@pytest.mark.parametrize("tag", ["0.1.0", "v0.1", "release-0.1.0", "v0.1.0-final"])
def test_a_tag_that_is_not_a_version_is_refused(root: Path, tag: str) -> None:
    (problem,) = version_mismatches(root, tag, allow_undated=True)
    assert "is not a version tag" in problem


def test_the_command_exits_1_and_prints_each_problem(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    version = project_version(root)
    assert main(["--tag", f"v{version}", "--root", str(root)]) == 1
    assert "has no date" in capsys.readouterr().err
    assert main(["--tag", f"v{version}", "--root", str(root), "--allow-undated"]) == 0
