"""Where a release publishes, by the name of the registry owner it runs under (the GitHub owner of
the repository the release workflow runs in): the names the release notes print and the chart is
stamped with. The registry wants lower case; a GitHub owner may have capitals."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
REGISTRY = "ghcr.io"
IMAGE_NAME = "modelgate"
CHART_NAME = "modelgate"
# The distribution's name on the package index (the import package and the commands are `modelgate`).
DISTRIBUTION: str = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["name"]


def image_repository(owner: str) -> str:
    return f"{REGISTRY}/{owner.lower()}/{IMAGE_NAME}"


def chart_registry(owner: str) -> str:
    """Where `helm push` puts the chart: the chart's own name is added by the registry."""
    return f"oci://{REGISTRY}/{owner.lower()}/charts"


def chart_reference(owner: str) -> str:
    return f"{chart_registry(owner)}/{CHART_NAME}"
