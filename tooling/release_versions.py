"""Before anything is published: the tag, pyproject.toml's version, the chart's version and
appVersion, the image's VERSION, the package's __version__ (`modelgate --version`) and
CHANGELOG.md's section must all name one version, and a tagged release's section must carry its
date (not `unreleased`).

    python -m tooling.release_versions --tag v0.1.0 [--allow-undated] [--root DIR]"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

import yaml

from tooling.release_names import REPO_ROOT
from tooling.release_notes import ChangelogError, changelog_section

_DOCKERFILE_VERSION = re.compile(r"^ARG VERSION=(\S+)$", re.M)
_PACKAGE_VERSION = re.compile(r'^__version__ = "([^"]+)"$', re.M)


def project_version(root: Path) -> str:
    version: str = tomllib.loads((root / "pyproject.toml").read_text())["project"]["version"]
    return version


def declared_versions(root: Path) -> dict[str, str | None]:
    """Each place that states the version, by what it is."""
    chart = yaml.safe_load((root / "charts" / "modelgate" / "Chart.yaml").read_text())
    dockerfile = _DOCKERFILE_VERSION.search((root / "Dockerfile").read_text())
    package = _PACKAGE_VERSION.search((root / "operator" / "modelgate" / "__init__.py").read_text())
    return {
        "pyproject.toml [project] version": project_version(root),
        "charts/modelgate/Chart.yaml version": str(chart["version"]),
        "charts/modelgate/Chart.yaml appVersion": str(chart["appVersion"]),
        "Dockerfile ARG VERSION": dockerfile[1] if dockerfile else None,
        "operator/modelgate/__init__.py __version__": package[1] if package else None,
    }


def version_mismatches(root: Path, tag: str, allow_undated: bool) -> list[str]:
    """What disagrees with the tag, one sentence each; empty when the release may go on."""
    if not re.fullmatch(r"v\d+\.\d+\.\d+(?:[-.]?(?:a|b|rc)\d+)?", tag):
        return [f"tag {tag!r} is not a version tag (v1.2.3, v1.2.3rc1)"]
    version = tag.removeprefix("v")
    problems = [
        f"{where} is {found!r}, the tag says {version!r}"
        for where, found in declared_versions(root).items()
        if found != version
    ]
    try:
        section = changelog_section((root / "CHANGELOG.md").read_text(), version)
    except ChangelogError as error:
        problems.append(str(error))
    else:
        if section.date is None and not allow_undated:
            problems.append(f"CHANGELOG.md's `## [{version}]` has no date (write `- YYYY-MM-DD`)")
    return problems


def parser() -> argparse.ArgumentParser:
    """The command line; the release workflow's calls are checked against it."""
    cli = argparse.ArgumentParser(prog="python -m tooling.release_versions", description=__doc__)
    cli.add_argument("--tag", required=True, help="the release's git tag (v0.1.0)")
    cli.add_argument(
        "--allow-undated", action="store_true", help="accept `- unreleased` (a check before tagging)"
    )
    cli.add_argument("--root", type=Path, default=REPO_ROOT)
    return cli


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    problems = version_mismatches(args.root, args.tag, args.allow_undated)
    for problem in problems:
        print(f"release versions: {problem}", file=sys.stderr)
    if not problems:
        print(f"release versions: {args.tag} agrees with pyproject.toml, the chart, the image, CHANGELOG.md")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
