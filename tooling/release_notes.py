"""A release's notes: its version's section of CHANGELOG.md, then how to install exactly what the
release published (the chart, the image, the Python distribution with the kubectl plugin).

    python -m tooling.release_notes 0.1.0 --owner OWNER [--image-digest sha256:...]
        [--repository-url URL] [-o FILE]"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from tooling.release_names import DISTRIBUTION, chart_reference, image_repository

CHANGELOG = Path(__file__).resolve().parents[1] / "CHANGELOG.md"
# `## [0.1.0] - 2027-01-15`, or `- unreleased` until the tag's date is written in.
_VERSION_HEADING = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\S.*))?$", re.M)
_ANY_SECTION = re.compile(r"^## ", re.M)
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class ChangelogError(ValueError):
    pass


@dataclass(frozen=True)
class Section:
    version: str
    date: str | None  # None while the heading says the version is not released yet
    body: str


def changelog_sections(text: str) -> dict[str, Section]:
    """Every version's section by version, in the order of the file (newest first)."""
    sections = {}
    for heading in _VERSION_HEADING.finditer(text):
        following = _ANY_SECTION.search(text, heading.end())
        body = text[heading.end() : following.start() if following else len(text)].strip()
        date = heading["date"]
        sections[heading["version"]] = Section(
            heading["version"], date if date and _DATE.fullmatch(date) else None, body
        )
    return sections


def changelog_section(text: str, version: str) -> Section:
    """The section of `version`; an error names the versions the changelog has."""
    sections = changelog_sections(text)
    if version not in sections:
        known = ", ".join(sections) or "none"
        raise ChangelogError(f"CHANGELOG.md has no section `## [{version}]` (versions: {known})")
    section = sections[version]
    if not section.body:
        raise ChangelogError(f"CHANGELOG.md's section `## [{version}]` is empty")
    return section


@dataclass(frozen=True)
class Published:
    """What a release put where: the version, the registry owner, the image's digest once pushed,
    and the repository whose release workflow signed it."""

    version: str
    owner: str
    image_digest: str | None = None
    repository_url: str | None = None


def install_block(published: Published) -> list[str]:
    """How to install what the release published, each artifact by its exact name and version."""
    version = published.version
    image = f"{image_repository(published.owner)}:{version}"
    if published.image_digest:
        image += f"@{published.image_digest}"
    return [
        "## Install",
        "",
        "The operator, from the chart (its values name the image below):",
        "",
        "```sh",
        f"helm install modelgate {chart_reference(published.owner)} --version {version} \\",
        "  --namespace modelgate --create-namespace",
        "```",
        "",
        f"The image: `{image}`.",
        "",
        "The `modelgate` command and the kubectl plugin (`kubectl modelrollout`), with Python 3.11+:",
        "",
        "```sh",
        f"pipx install '{DISTRIBUTION}=={version}'",
        "```",
        "",
    ]


def verify_block(published: Published) -> list[str]:
    """The cosign command that checks the image was signed by this repository's release workflow."""
    if not (published.image_digest and published.repository_url):
        return []
    workflow = f"{published.repository_url}/.github/workflows/release.yaml@refs/tags/v{published.version}"
    return [
        "The image is signed by the release workflow (cosign keyless); to check it:",
        "",
        "```sh",
        f"cosign verify {image_repository(published.owner)}@{published.image_digest} \\",
        f"  --certificate-identity '{workflow}' \\",
        "  --certificate-oidc-issuer https://token.actions.githubusercontent.com",
        "```",
        "",
    ]


def release_notes(changelog: str, published: Published) -> str:
    section = changelog_section(changelog, published.version)
    return "\n".join([section.body, "", *install_block(published), *verify_block(published)])


def parser() -> argparse.ArgumentParser:
    """The command line; the release workflow's calls are checked against it."""
    cli = argparse.ArgumentParser(prog="python -m tooling.release_notes", description=__doc__)
    cli.add_argument("version", help="the version, as in pyproject.toml (0.1.0)")
    cli.add_argument("--owner", required=True, help="the registry owner the release publishes under")
    cli.add_argument("--image-digest", help="sha256:... of the published image")
    cli.add_argument("--repository-url", help="the repository whose release workflow signed the image")
    cli.add_argument("--changelog", type=Path, default=CHANGELOG)
    cli.add_argument("-o", "--output", type=Path, help="default: standard output")
    return cli


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        published = Published(args.version, args.owner, args.image_digest, args.repository_url)
        notes = release_notes(args.changelog.read_text(), published)
    except ChangelogError as error:
        print(f"release notes: {error}", file=sys.stderr)
        return 1
    if args.output:
        args.output.write_text(notes)
    else:
        sys.stdout.write(notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
