"""The chart as a release publishes it, stamped into a copy of charts/modelgate: its version and
appVersion, `home`, `sources` and the maintainers' URL from the repository the release runs in (the
committed Chart.yaml names no URL: the project has no fixed public address), and the image the
release pushed (`image.repository`, and `image.digest` so that the chart runs exactly those bytes).
values.yaml keeps its comments: only the two lines of the top-level `image` block change.

    python -m tooling.release_chart --version 0.1.0 --owner OWNER --repository-url URL \\
        [--image-digest sha256:...] --out DIR"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

from tooling.release_names import CHART_NAME, REPO_ROOT, image_repository

CHART = REPO_ROOT / "charts" / CHART_NAME
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_URL = re.compile(r"https://[^\s/]+(/\S*)?")


class StampError(ValueError):
    pass


def stamped_metadata(chart: dict[str, Any], version: str, repository_url: str) -> dict[str, Any]:
    if not _URL.fullmatch(repository_url):
        raise StampError(f"--repository-url: expected an https:// URL, got {repository_url!r}")
    return {
        **{key: value for key, value in chart.items() if key != "icon"},
        "version": version,
        "appVersion": version,
        "home": repository_url,
        "sources": [repository_url],
        "maintainers": [{"name": "modelgate maintainers", "url": repository_url}],
    }


def _image_block(lines: list[str]) -> range:
    """The lines of values.yaml's top-level `image:` mapping (its indented lines)."""
    start = lines.index("image:") + 1
    end = start
    while end < len(lines) and (lines[end].startswith((" ", "#")) or not lines[end]):
        end += 1
    return range(start, end)


def stamped_values(text: str, repository: str, digest: str | None) -> str:
    """values.yaml with the top-level image's repository (and digest) set, comments kept."""
    if digest is not None and not _DIGEST.fullmatch(digest):
        raise StampError(f"--image-digest: expected sha256:<64 hex digits>, got {digest!r}")
    lines = text.split("\n")
    wanted = {"repository": repository} | ({"digest": digest} if digest else {})
    for index in _image_block(lines):
        key = lines[index].removeprefix("  ").partition(":")[0]
        if lines[index].startswith(f"  {key}:") and key in wanted:
            lines[index] = f'  {key}: "{wanted.pop(key)}"'
    if wanted:
        raise StampError(f"values.yaml's `image` block has no {', '.join(wanted)} line to stamp")
    stamped = "\n".join(lines)
    before, after = yaml.safe_load(text), yaml.safe_load(stamped)
    expected = before | {"image": before["image"] | {"repository": repository, "digest": digest or ""}}
    if after != expected:  # the edit touched more than the two values
        raise StampError("stamping values.yaml changed more than image.repository and image.digest")
    return stamped


def stamp_chart(
    out: Path, version: str, owner: str, repository_url: str, digest: str | None, source: Path = CHART
) -> Path:
    """A stamped copy of the chart under `out` (replacing an earlier one); its folder."""
    chart_dir = out / CHART_NAME
    shutil.rmtree(chart_dir, ignore_errors=True)
    shutil.copytree(source, chart_dir)
    chart_yaml = chart_dir / "Chart.yaml"
    metadata = stamped_metadata(yaml.safe_load(chart_yaml.read_text()), version, repository_url)
    chart_yaml.write_text(yaml.safe_dump(metadata, sort_keys=False, width=100))
    values = chart_dir / "values.yaml"
    values.write_text(stamped_values(values.read_text(), image_repository(owner), digest))
    return chart_dir


def parser() -> argparse.ArgumentParser:
    """The command line; the release workflow's calls are checked against it."""
    cli = argparse.ArgumentParser(prog="python -m tooling.release_chart", description=__doc__)
    cli.add_argument("--version", required=True)
    cli.add_argument("--owner", required=True, help="the registry owner the image is pushed under")
    cli.add_argument("--repository-url", required=True, help="the chart's home and sources")
    cli.add_argument("--image-digest", help="sha256:... of the pushed image (default: by tag)")
    cli.add_argument("--out", type=Path, required=True, help="the stamped chart goes to OUT/modelgate")
    return cli


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        chart_dir = stamp_chart(args.out, args.version, args.owner, args.repository_url, args.image_digest)
    except StampError as error:
        print(f"release chart: {error}", file=sys.stderr)
        return 1
    print(chart_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
