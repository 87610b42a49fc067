"""The release workflow (.github/workflows/release.yaml) without GitHub: it runs on version tags
only, nothing is uploaded before the version check and the builds pass, each job holds only the
write rights its upload needs, and every tooling/ script it calls accepts the arguments it is
given; those scripts are the ones `make release-check` runs (tests/unit/test_release_check.py).
actionlint checks it with the other workflows (tests/unit/test_e2e_assets.py)."""

from __future__ import annotations

import importlib
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from testbed.versions import REPO_ROOT
from tooling.release_names import chart_registry, image_repository
from tooling.release_versions import project_version

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "release.yaml"
RELEASE_CHECK = REPO_ROOT / "tooling" / "release_check.py"
VERSION = project_version(REPO_ROOT)


def workflow() -> dict[Any, Any]:
    loaded = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(loaded, dict)
    return loaded


def jobs() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = workflow()["jobs"]
    return found


def needs(job: dict[str, Any]) -> set[str]:
    named = job.get("needs", [])
    return {named} if isinstance(named, str) else set(named)


def upstream(name: str) -> set[str]:
    """Every job `name` waits for, directly or not."""
    found: set[str] = set()
    pending = needs(jobs()[name])
    while pending:
        job = pending.pop()
        found.add(job)
        pending |= needs(jobs()[job]) - found
    return found


def shell_lines() -> list[str]:
    """The run steps' lines, continuations joined."""
    lines = []
    for job in jobs().values():
        for step in job["steps"]:
            if "run" in step:
                lines.extend(step["run"].replace("\\\n", " ").splitlines())
    return lines


def test_runs_on_version_tags_only_and_never_cancels_a_release_half_way() -> None:
    loaded = workflow()
    triggers = loaded["on"] if "on" in loaded else loaded[True]  # YAML 1.1 reads `on` as True
    assert triggers == {"push": {"tags": ["v*"]}}
    assert loaded["permissions"] == {"contents": "read"}
    assert loaded["concurrency"]["cancel-in-progress"] is False


def test_every_upload_waits_for_the_check_and_pypi_comes_after_the_image_and_chart() -> None:
    assert needs(jobs()["check"]) == set()
    for name in jobs().keys() - {"check"}:
        assert "check" in upstream(name), name
    # A version on PyPI can never be uploaded again: it goes last but for the GitHub release.
    assert {"image", "chart"} <= upstream("pypi")
    assert {"image", "chart", "pypi"} <= upstream("github-release")


def test_each_job_holds_only_the_write_rights_of_its_upload() -> None:
    writes = {
        name: {right for right, level in job.get("permissions", {}).items() if level == "write"}
        for name, job in jobs().items()
    }
    assert writes == {
        "check": set(),
        "image": {"packages", "id-token"},  # the image pushed, signed keyless
        "chart": {"packages", "id-token"},  # the chart pushed, signed keyless
        "pypi": {"id-token"},  # trusted publishing
        "github-release": {"contents"},
    }
    assert jobs()["pypi"]["environment"] == "pypi"


def test_every_tooling_call_is_accepted_by_the_scripts_command_line() -> None:
    calls = [shlex.split(line) for line in shell_lines() if " -m tooling." in line]
    modules = set()
    for words in calls:
        start = words.index("-m") + 1
        module = importlib.import_module(words[start])
        # Shell variables stand for values the runner fills in.
        arguments = ["1.2.3" if "$" in word else word for word in words[start + 1 :]]
        module.parser().parse_args(arguments)
        modules.add(words[start])
    assert modules == {"tooling.release_versions", "tooling.release_chart", "tooling.release_notes"}
    # The same scripts make release-check runs.
    for name in modules:
        assert re.search(rf"^from {re.escape(name)} import ", RELEASE_CHECK.read_text(), re.M), name


def test_the_image_and_chart_go_where_the_release_notes_say() -> None:
    text = "\n".join(shell_lines())
    assert f'image="{image_repository("$owner")}"' in text
    assert f'"{chart_registry("$owner")}"' in text
    # The owner in lower case (the registry refuses capitals), as release_names lowers it.
    assert "owner=${GITHUB_REPOSITORY_OWNER,,}" in text


def test_the_image_is_multi_arch_and_its_digest_reaches_the_chart() -> None:
    text = "\n".join(shell_lines())
    assert "--platform linux/amd64,linux/arm64" in text
    assert jobs()["image"]["outputs"]["digest"] == "${{ steps.push.outputs.digest }}"
    assert jobs()["chart"]["env"]["DIGEST"] == "${{ needs.image.outputs.digest }}"
    assert '--image-digest "$DIGEST"' in text
    assert 'cosign sign --yes "$image@$digest"' in text
    assert 'cosign sign --yes "ghcr.io/$owner/charts/modelgate@$chart_digest"' in text


def test_the_notes_need_only_the_standard_library_as_the_release_job_has_it(tmp_path: Path) -> None:
    """The github-release job runs tooling.release_notes with setup-python's bare interpreter."""
    notes = tmp_path / "notes.md"
    result = subprocess.run(
        # -S: no site-packages, so no PyYAML or anything else the lock installs.
        [sys.executable, "-S", "-m", "tooling.release_notes", VERSION, "--owner", "o", "-o", str(notes)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"--version {VERSION}" in notes.read_text()
    (step,) = [line for line in shell_lines() if "-m tooling.release_notes" in line]
    assert step.split()[0] == "python"  # not .venv/bin/python: the job installs nothing
