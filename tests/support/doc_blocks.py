"""A doc's shell blocks run as written: the blocks of one section, and a folder laid out as the
checkout is, so that a page's relative paths and `make` targets mean what they mean there."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

from testbed import binaries
from testbed.localcluster import LocalCluster
from testbed.processes import python_module_env
from testbed.versions import REPO_ROOT


def documented_blocks(doc: Path, section: str) -> list[list[str]]:
    """The `sh` blocks of the section headed `section` (up to the next `## `), each as its command
    lines, continuation lines joined."""
    text = doc.read_text()
    body = text[text.index(section) :]
    body = body[: body.find("\n## ", len(section))]
    blocks = re.findall(r"```sh\n(.*?)```", body, re.DOTALL)
    return [[line for line in block.replace("\\\n", " ").splitlines() if line.strip()] for block in blocks]


def checkout(tmp_path: Path, bed: LocalCluster, *files: str) -> tuple[Path, dict[str, str]]:
    """A folder where the doc's relative paths mean what they mean in the checkout, `.localcluster`
    being the session's bed and `files` (e.g. the Makefile) linked from the repository; and a HOME
    whose ~/.cache/modelgate is the bed's binaries."""
    folder = tmp_path / "checkout"
    folder.mkdir()
    (folder / ".localcluster").symlink_to(bed.layout.root)
    for name in ("examples", ".venv", *files):
        (folder / name).symlink_to(REPO_ROOT / name)
    home = tmp_path / "home"
    (home / ".cache").mkdir(parents=True)
    (home / ".cache" / "modelgate").symlink_to(binaries.CACHE)
    return folder, {**python_module_env(), "HOME": str(home), "PATH": "/usr/bin:/bin"}


def run_commands(
    commands: list[str], folder: Path, env: Mapping[str, str], timeout: float, *, stop_on_error: bool
) -> subprocess.CompletedProcess[str]:
    """A documented block's commands in one shell, as a user would paste them; with `stop_on_error`,
    the first that fails ends the block (`bash -e`)."""
    return subprocess.run(
        ["bash", "-euc" if stop_on_error else "-uc", "\n".join(commands)],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
