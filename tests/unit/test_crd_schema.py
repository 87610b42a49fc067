"""Rules the generated CRD must follow whatever the models say: a structural schema, every field
described, and the bounds the CEL cost budget needs.

That it matches the models is tests/unit/test_generated_files.py; what the CEL rules accept and reject
belongs to tests against a real API server (tests/cluster).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tooling import crd_gen


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    return crd_gen.build_crd()


def schema_nodes(node: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node below `node` (included), with its path."""
    yield path, node
    for name, child in node.get("properties", {}).items():
        yield from schema_nodes(child, f"{path}.{name}")
    if "items" in node:
        yield from schema_nodes(node["items"], f"{path}[]")


def spec_and_status_nodes(crd: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return [
        *schema_nodes(root["properties"]["spec"], "spec"),
        *schema_nodes(root["properties"]["status"], "status"),
    ]


def test_schema_is_structural(crd: dict[str, Any]) -> None:
    for path, node in spec_and_status_nodes(crd):
        assert "type" in node, f"{path} has no type"
        assert "x-kubernetes-preserve-unknown-fields" not in node, f"{path} keeps unknown fields"
        assert not {"anyOf", "oneOf", "allOf", "not"} & node.keys(), path
        assert not {"properties", "additionalProperties"} <= node.keys(), f"{path}: both kinds of properties"


def test_every_field_is_described(crd: dict[str, Any]) -> None:
    undescribed = [path for path, node in spec_and_status_nodes(crd) if not node.get("description")]
    assert undescribed == []


def test_lists_and_strings_are_bounded(crd: dict[str, Any]) -> None:
    # The API server rejects CEL rules whose estimated cost is unbounded; bounds also keep objects small.
    for path, node in spec_and_status_nodes(crd):
        if node["type"] == "array":
            assert "maxItems" in node, f"{path} has no maxItems"
        if node["type"] == "string":
            assert {"maxLength", "enum", "format"} & node.keys(), f"{path} has no maxLength"


def test_list_map_keys_are_required(crd: dict[str, Any]) -> None:
    for path, node in spec_and_status_nodes(crd):
        if node.get("x-kubernetes-list-type") == "map":
            required = set(node["items"]["required"])
            assert set(node["x-kubernetes-list-map-keys"]) <= required, path


def test_status_is_managed_as_one_value(crd: dict[str, Any]) -> None:
    # The operator writes the status whole; per-field managed fields cost every write (bench/REPORT.md).
    root = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert root["properties"]["status"]["x-kubernetes-map-type"] == "atomic"
    assert "x-kubernetes-map-type" not in root["properties"]["spec"], (
        "spec is applied by its users, field by field"
    )
