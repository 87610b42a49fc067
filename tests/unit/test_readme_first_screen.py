"""README's first screen (40 lines) holds what modelgate is and why, how to try it and how to install
it, with commands that work: the make target exists, the chart and distribution names are the
project's own (charts/modelgate/Chart.yaml, pyproject.toml), and every link leads to a file."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
FIRST_SCREEN = 40
CHART = yaml.safe_load((ROOT / "charts" / "modelgate" / "Chart.yaml").read_text())
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CRD = yaml.safe_load((ROOT / "crds" / "modelrollouts.modelgate.io.yaml").read_text())


def first_screen() -> str:
    return "\n".join((ROOT / "README.md").read_text().splitlines()[:FIRST_SCREEN])


def commands(text: str) -> list[list[str]]:
    """Each command line of the fenced shell blocks in `text`, split as the shell would."""
    blocks = re.findall(r"^```sh\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    return [
        shlex.split(line, comments=True) for block in blocks for line in block.splitlines() if line.strip()
    ]


def command(text: str, *head: str) -> list[str]:
    found = [argv for argv in commands(text) if argv[: len(head)] == list(head)]
    assert len(found) == 1, f"README's first {FIRST_SCREEN} lines should hold one `{' '.join(head)}`: {found}"
    return found[0]


def test_the_opening_says_what_and_why_in_five_lines() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert lines[0].startswith("# ") and lines[1] == ""
    opening = lines[2 : lines.index("", 2)]
    assert 2 <= len(opening) <= 5, opening
    text = " ".join(opening)
    assert CRD["spec"]["names"]["kind"] in text and "Prometheus" in text and "Why" in text


def test_try_it_is_the_playground() -> None:
    assert command(first_screen(), "make", "playground") == ["make", "playground"]
    assert re.search(r"^playground:", (ROOT / "Makefile").read_text(), flags=re.MULTILINE)


def test_the_helm_line_installs_this_chart_at_its_version() -> None:
    argv = command(first_screen(), "helm", "install")
    release, chart = argv[2], argv[3]
    assert release == CHART["name"]
    assert re.fullmatch(rf"oci://ghcr\.io/[A-Za-z0-9-]+/charts/{re.escape(CHART['name'])}", chart), chart
    assert argv[argv.index("--version") + 1] == CHART["version"]
    assert "--namespace" in argv and "--create-namespace" in argv


def test_the_pipx_line_installs_this_distribution() -> None:
    argv = command(first_screen(), "pipx", "install")
    assert argv == ["pipx", "install", PYPROJECT["project"]["name"]]
    assert {"modelgate", "kubectl-modelrollout"} <= set(PYPROJECT["project"]["scripts"])


def test_the_source_path_builds_the_image_and_installs_the_local_chart() -> None:
    text = first_screen()
    assert "`Dockerfile`" in text and (ROOT / "Dockerfile").is_file()
    source = re.search(r"`(helm install [^`]+)`", text)
    assert source is not None, "README's first screen names no from-source helm install"
    argv = shlex.split(source[1])
    assert (ROOT / argv[3] / "Chart.yaml").is_file() and "image.repository=" in argv[-1]


def test_the_first_screen_links_lead_to_files() -> None:
    targets = re.findall(r"\]\(([^)#\s]+)[^)]*\)", first_screen())
    assert any(target.startswith("docs/") for target in targets)
    for target in targets:
        assert (ROOT / target).exists(), target


def test_set_up_keeps_exactly_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Set-up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    assert [argv[:2] for argv in commands(section)] == [["make", "demo"], ["make", "test"]]
