"""Every relative link in docs/ leads to a file of the repository and, with a #fragment, to a heading
of that page; and the chart values that docs/getting-started.md tells users to set exist."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tooling.docs_gen import anchor

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
VALUES = ROOT / "charts" / "modelgate" / "values.yaml"


def prose(text: str) -> str:
    """`text` without fenced code blocks and code spans."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.sub(r"(`+).*?\1", "", text)


def headings(page: Path) -> set[str]:
    return {
        anchor(line.lstrip("#").strip())
        for line in prose(page.read_text()).splitlines()
        if line.startswith("#")
    }


def links() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        for target in LINK.findall(prose(page.read_text())):
            if not re.match(r"[a-z]+:", target):
                found.append((page.name, target))
    return found


def test_the_pages_exist() -> None:
    names = {page.name for page in PAGES}
    assert {
        "README.md",
        "getting-started.md",
        "api-reference.md",
        "metric-presets.md",
        "troubleshooting.md",
    } <= names


def test_the_index_lists_every_page() -> None:
    index = (DOCS / "README.md").read_text()
    for page in PAGES:
        if page.name != "README.md":
            assert f"]({page.name})" in index, f"docs/README.md does not link {page.name}"


@pytest.mark.parametrize(("page", "target"), links())
def test_link_leads_somewhere(page: str, target: str) -> None:
    path, _, fragment = target.partition("#")
    resolved = (DOCS / page).parent / path if path else DOCS / page
    assert resolved.exists(), f"{page}: {target} does not exist"
    if fragment:
        assert resolved.suffix == ".md", f"{page}: {target}: a fragment on a file that is not a page"
        assert fragment in headings(resolved), f"{page}: {target}: no heading with that anchor"


def has_path(values: dict[str, Any], dotted: str) -> bool:
    node: Any = values
    for key in dotted.split("."):
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def test_getting_started_names_real_chart_values() -> None:
    if not VALUES.exists():
        pytest.skip(f"{VALUES.relative_to(ROOT)} does not exist yet")
    values = yaml.safe_load(VALUES.read_text())
    text = (DOCS / "getting-started.md").read_text()
    table = re.findall(r"^\| `([A-Za-z.]+)` \|", text, flags=re.MULTILINE)
    flags = re.findall(r"--set '?([A-Za-z.]+)=", text)
    inline = re.findall(r"`(image\.[A-Za-z]+)`", text)
    named = set(table) | set(flags) | set(inline)
    assert len(named) >= 8
    missing = sorted(name for name in named if not has_path(values, name))
    assert not missing, f"docs/getting-started.md names chart values that do not exist: {missing}"
