"""The chart as a release stamps it (tooling/release_chart.py): its metadata points at the
repository the release runs in, its values at the pushed image by digest, with values.yaml's
comments kept; the stamped chart lints and renders with its defaults (no `--set` needed)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.binaries import binary
from testbed.versions import REPO_ROOT
from tooling.release_chart import StampError, main, stamp_chart, stamped_values

CHART = REPO_ROOT / "charts" / "modelgate"
DIGEST = "sha256:" + "0123456789abcdef" * 4
URL = "https://git.example.invalid/Some-Org/modelgate"


def helm(*args: str | Path) -> str:
    result = subprocess.run(
        [str(binary("helm")), *map(str, args)], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def stamped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("stamped")
    assert (
        main(
            [
                "--version",
                "1.2.3",
                "--owner",
                "Some-Org",
                "--repository-url",
                URL,
                "--image-digest",
                DIGEST,
                "--out",
                str(out),
            ]
        )
        == 0
    )
    return out / "modelgate"


def chart_yaml(chart: Path) -> dict[str, Any]:
    loaded = yaml.safe_load((chart / "Chart.yaml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def test_the_committed_chart_names_no_address() -> None:
    metadata = chart_yaml(CHART)
    assert not {"home", "sources", "icon", "maintainers"} & set(metadata)


def test_the_stamped_metadata_points_at_the_releasing_repository(stamped: Path) -> None:
    metadata = chart_yaml(stamped)
    assert (metadata["version"], metadata["appVersion"]) == ("1.2.3", "1.2.3")
    assert metadata["home"] == URL and metadata["sources"] == [URL]
    assert [m["url"] for m in metadata["maintainers"]] == [URL]
    assert "icon" not in metadata
    # Everything else as committed.
    committed = chart_yaml(CHART)
    assert {k: v for k, v in metadata.items() if k in committed and k not in ("version", "appVersion")} == {
        k: v for k, v in committed.items() if k not in ("version", "appVersion")
    }


def test_only_the_two_image_lines_of_values_change(stamped: Path) -> None:
    before = (CHART / "values.yaml").read_text().splitlines()
    after = (stamped / "values.yaml").read_text().splitlines()
    assert len(before) == len(after)  # every comment kept
    changed = {old: new for old, new in zip(before, after, strict=True) if old != new}
    assert changed == {
        '  repository: ""': '  repository: "ghcr.io/some-org/modelgate"',
        '  digest: ""': f'  digest: "{DIGEST}"',
    }


def test_the_stamped_chart_lints_and_runs_the_pushed_image_by_digest(stamped: Path) -> None:
    helm("lint", "--strict", stamped)
    rendered = [
        doc for doc in yaml.safe_load_all(helm("template", "mg", stamped, "--namespace", "mg")) if doc
    ]
    (deployment,) = [doc for doc in rendered if doc["kind"] == "Deployment"]
    images = {c["image"] for c in deployment["spec"]["template"]["spec"]["containers"]}
    assert images == {f"ghcr.io/some-org/modelgate@{DIGEST}"}


@pytest.mark.parametrize(
    ("digest", "url", "named"),
    [
        ("sha256:abc", URL, "--image-digest"),
        ("latest", URL, "--image-digest"),
        (DIGEST, "http://example.invalid/x", "--repository-url"),
        (DIGEST, "github.com/x/y", "--repository-url"),
    ],
)
def test_a_malformed_digest_or_url_is_refused_naming_the_option(
    tmp_path: Path, digest: str, url: str, named: str
) -> None:
    with pytest.raises(StampError, match=named):
        stamp_chart(tmp_path, "1.2.3", "o", url, digest)


def test_values_without_an_image_block_line_to_stamp_are_refused() -> None:
    with pytest.raises(StampError, match="no repository line"):
        stamped_values('image:\n  tag: x\n  digest: ""\nother: 1\n', "r", DIGEST)
