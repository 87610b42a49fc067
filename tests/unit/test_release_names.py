"""Names that are ours: the Python distribution's name is free on the package index (the package
list this machine keeps of it), every install hint names that distribution, and no tracked file
points at the unrelated project's repository (the chart's metadata once did) or its registry namespace."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from testbed.versions import REPO_ROOT
from tooling.release_names import DISTRIBUTION
from tooling.requirements_lock import normalized

# The package index's names, one a row (tab-separated, the name first), as this workplace keeps them.
PACKAGE_LIST = Path("/work/.library/env/packages/pypi.tsv")
# Places under the name `modelgate` that are not ours: the unrelated project's repository, and its
# owner's namespace on the registry. Written in two parts so that this file does not name them.
STRANGERS_PLACES = ("github.com/" + "modelgate", "ghcr.io/" + "modelgate/")
INSTALL_HINT = re.compile(r"pip install '?([A-Za-z0-9][A-Za-z0-9._-]*)\[")


def tracked_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        check=True,
    ).stdout
    return [REPO_ROOT / name for name in listed.decode().split("\0") if name and (REPO_ROOT / name).is_file()]


def texts() -> dict[Path, str]:
    found = {}
    for path in tracked_files():
        try:
            found[path] = path.read_text()
        except UnicodeDecodeError:
            continue  # images and other binary files
    return found


def index_names(containing: str) -> set[str]:
    """The normalized names on the index that contain `containing` (lower case)."""
    if not PACKAGE_LIST.is_file():
        pytest.skip(f"{PACKAGE_LIST} is absent: no list of the package index's names on this machine")
    with PACKAGE_LIST.open() as rows:
        # The name is the first field; a cheap test first: the list has hundreds of thousands of rows.
        names = (row.partition("\t")[0] for row in rows)
        return {normalized(name) for name in names if containing in name.lower()}


def test_the_distribution_name_is_not_on_the_package_index() -> None:
    stem = "modelgate"
    assert stem in normalized(DISTRIBUTION)  # else the names read below could not hold it
    names = index_names(stem)
    # The list is the index's: it has the stranger's `modelgate`, the name this distribution avoids.
    assert "modelgate" in names
    assert normalized(DISTRIBUTION) not in names


def test_every_install_hint_names_the_distribution() -> None:
    hints = {
        (path.relative_to(REPO_ROOT).as_posix(), name)
        for path, text in texts().items()
        for name in INSTALL_HINT.findall(text)
    }
    assert hints, "no install hint of an extra found: the pattern no longer matches the docs"
    assert {hint for hint in hints if hint[1] != DISTRIBUTION} == set()


def test_no_tracked_file_names_the_unrelated_repository_or_registry_namespace() -> None:
    naming = [
        (path.relative_to(REPO_ROOT).as_posix(), place)
        for path, text in texts().items()
        for place in STRANGERS_PLACES
        if place in text
    ]
    assert naming == []
