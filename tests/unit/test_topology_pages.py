"""docs/topologies/: every page names its runnable manifest (examples/topologies/<page>.yaml), every
manifest has a page, holds a valid ModelRollout and is applied by some cluster test (which loads it
through testbed/topologies.py, by the page's name), and the index lists every page: a page cannot
drift from what a test proves."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from modelgate.api import parse_spec
from testbed.topologies import (
    TOPOLOGY_MANIFESTS,
    TOPOLOGY_PAGES,
    model_rollout_of,
    topology_documents,
    topology_manifest,
)
from testbed.versions import REPO_ROOT

INDEX = TOPOLOGY_PAGES / "README.md"
CLUSTER_TESTS = REPO_ROOT / "tests" / "cluster"
PAGES = sorted(page.stem for page in TOPOLOGY_PAGES.glob("*.md") if page != INDEX)
MANIFESTS = sorted(manifest.stem for manifest in TOPOLOGY_MANIFESTS.glob("*.yaml"))


def test_there_are_topology_pages_and_each_has_its_manifest() -> None:
    assert PAGES, f"no page in {TOPOLOGY_PAGES}"
    assert PAGES == MANIFESTS


@pytest.mark.parametrize("name", PAGES)
def test_a_page_links_its_manifest(name: str) -> None:
    text = (TOPOLOGY_PAGES / f"{name}.md").read_text()
    assert f"](../../examples/topologies/{name}.yaml)" in text, f"docs/topologies/{name}.md"
    assert topology_manifest(name).is_file()


@pytest.mark.parametrize("name", MANIFESTS)
def test_a_manifest_holds_a_valid_model_rollout(name: str) -> None:
    documents = topology_documents(name)
    for document in documents:
        assert {"apiVersion", "kind", "metadata"} <= document.keys(), document
        assert document["metadata"].get("name"), document
        assert "namespace" not in document["metadata"], "a page's manifest goes in the reader's namespace"
    parse_spec(model_rollout_of(documents)["spec"])


def loading_tests(name: str) -> list[Path]:
    """The cluster test files that load topology `name`: through testbed.topologies by the page's
    name in a string, or by the manifest's file name."""
    by_name = re.compile(rf"""["']{re.escape(name)}["']""")
    return [
        path
        for path in sorted(CLUSTER_TESTS.glob("test_*.py"))
        if f"{name}.yaml" in (text := path.read_text())
        or ("from testbed.topologies import" in text and by_name.search(text))
    ]


@pytest.mark.parametrize("name", MANIFESTS)
def test_a_manifest_is_applied_by_a_cluster_test(name: str) -> None:
    assert loading_tests(name), f"no tests/cluster file loads examples/topologies/{name}.yaml"


def test_the_index_lists_every_page_once() -> None:
    linked = re.findall(r"\]\(([\w-]+)\.md\)", INDEX.read_text())
    assert sorted(linked) == PAGES
