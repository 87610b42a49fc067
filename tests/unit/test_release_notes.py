"""The release notes: CHANGELOG.md's section of the released version (tooling/release_notes.py),
then how to install exactly what the release published; and CHANGELOG.md cut into versions, the
first one with nothing "Breaking" (no one could install a version before it)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from testbed.versions import REPO_ROOT
from tooling.release_names import DISTRIBUTION
from tooling.release_notes import (
    ChangelogError,
    Published,
    changelog_section,
    changelog_sections,
    main,
    release_notes,
)
from tooling.release_versions import project_version

CHANGELOG = (REPO_ROOT / "CHANGELOG.md").read_text()
DIGEST = "sha256:" + "ab" * 32
SAMPLE = """# Changelog

Preamble.

## Unreleased

### Added
- Something not released yet.

## [1.1.0] - 2027-03-02

### Breaking
- A field means another thing.

## [1.0.0] - unreleased

### Added
- The first thing.
- The second thing.

## [0.9.0] - 2026-12-01

### Fixed
- An old fix.
"""


def test_a_versions_section_runs_from_its_heading_to_the_next_section() -> None:
    section = changelog_section(SAMPLE, "1.0.0")
    assert section.body == "### Added\n- The first thing.\n- The second thing."
    assert section.date is None  # `unreleased` is no date
    assert changelog_section(SAMPLE, "1.1.0").date == "2027-03-02"
    assert changelog_section(SAMPLE, "0.9.0").body == "### Fixed\n- An old fix."
    # Newest first, as the file has them; Unreleased is no version.
    assert list(changelog_sections(SAMPLE)) == ["1.1.0", "1.0.0", "0.9.0"]


def test_a_version_without_a_section_or_with_an_empty_one_is_an_error_naming_the_versions() -> None:
    with pytest.raises(
        ChangelogError, match=r"no section `## \[2\.0\.0\]` \(versions: 1\.1\.0, 1\.0\.0, 0\.9\.0\)"
    ):
        changelog_section(SAMPLE, "2.0.0")
    with pytest.raises(ChangelogError, match="empty"):
        changelog_section("## [3.0.0] - 2027-01-01\n\n## [2.0.0] - 2026-01-01\n- x\n", "3.0.0")


def test_the_notes_are_the_section_then_the_install_commands_of_exactly_this_release(tmp_path: Path) -> None:
    changelog = tmp_path / "CHANGELOG.md"
    changelog.write_text(SAMPLE)
    notes = tmp_path / "notes.md"
    status = main(
        [
            "1.0.0",
            "--owner",
            "Some-Org",
            "--image-digest",
            DIGEST,
            "--repository-url",
            "https://github.com/Some-Org/modelgate",
            "--changelog",
            str(changelog),
            "-o",
            str(notes),
        ]
    )
    assert status == 0
    text = notes.read_text()
    assert text.startswith("### Added\n- The first thing.\n- The second thing.\n")
    assert "An old fix" not in text and "not released yet" not in text
    # The registry's names in lower case, the chart and the distribution at this version.
    assert "oci://ghcr.io/some-org/charts/modelgate --version 1.0.0" in text
    assert f"`ghcr.io/some-org/modelgate:1.0.0@{DIGEST}`" in text
    assert f"pipx install '{DISTRIBUTION}==1.0.0'" in text
    # The signature checked against the workflow of the tag that made it.
    assert f"cosign verify ghcr.io/some-org/modelgate@{DIGEST}" in text
    workflow = "https://github.com/Some-Org/modelgate/.github/workflows/release.yaml@refs/tags/v1.0.0"
    assert f"--certificate-identity '{workflow}'" in text


def test_without_a_pushed_image_the_notes_name_it_by_tag_and_verify_nothing() -> None:
    notes = release_notes(SAMPLE, Published("1.0.0", "org"))
    assert "`ghcr.io/org/modelgate:1.0.0`" in notes
    assert "cosign" not in notes


def test_notes_for_a_version_the_changelog_lacks_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    changelog = tmp_path / "CHANGELOG.md"
    changelog.write_text(SAMPLE)
    assert main(["2.0.0", "--owner", "o", "--changelog", str(changelog)]) == 1
    assert "no section `## [2.0.0]`" in capsys.readouterr().err


def test_the_changelog_opens_with_an_empty_unreleased_section_then_the_projects_version() -> None:
    headings = re.findall(r"^## (.*)$", CHANGELOG, re.M)
    assert headings[0] == "Unreleased"
    assert CHANGELOG.split("## Unreleased", 1)[1].lstrip().startswith("## [")
    assert next(iter(changelog_sections(CHANGELOG))) == project_version(REPO_ROOT)


def test_the_first_version_breaks_nothing_and_is_read_in_a_minute() -> None:
    first = list(changelog_sections(CHANGELOG).values())[-1]
    assert first.version == "0.1.0"
    assert "Breaking" not in first.body
    assert len(first.body.splitlines()) <= 60
    # The preamble says what Breaking means from now on: breaking for someone who had installed.
    preamble = CHANGELOG.split("## Unreleased", 1)[0]
    assert "**Breaking**" in preamble and "installed the version before" in preamble
