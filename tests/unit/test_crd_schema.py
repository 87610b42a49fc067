"""Rules the generated CRD must follow whatever the models say: a structural schema, every field
described, and the bounds the CEL cost budget needs.

That it matches the models is tests/unit/test_generated_files.py; what the CEL rules accept and reject
belongs to tests against a real API server (tests/cluster).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tooling import crd_gen

ROOT = Path(__file__).resolve().parents[2]


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


def generated_crd_files() -> list[Path]:
    files = sorted((ROOT / "crds").glob("*.yaml"))
    assert {path.name for path in files} >= {kind.crd_file.name for kind in crd_gen.KINDS}
    return files


def all_nodes(node: dict[str, Any], path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema node below `node`, map values included."""
    yield path, node
    for name, child in node.get("properties", {}).items():
        yield from all_nodes(child, f"{path}.{name}")
    if "items" in node:
        yield from all_nodes(node["items"], f"{path}[]")
    if isinstance(node.get("additionalProperties"), dict):
        yield from all_nodes(node["additionalProperties"], f"{path}.*")


@pytest.mark.parametrize("crd_file", generated_crd_files(), ids=lambda path: path.name)
def test_every_number_has_a_maximum_and_a_minimum(crd_file: Path) -> None:
    """Issue 34: a pricePerHour of 1e308 was admitted and overflowed the cost to infinity. Every
    number and integer of the CRDs as committed is bounded on both sides, by the API server."""
    document = yaml.safe_load(crd_file.read_text())
    root = document["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    numbers = [
        (path, node) for path, node in all_nodes(root, "") if node.get("type") in ("number", "integer")
    ]
    assert len(numbers) > 20  # the walk reaches them
    unbounded = [path for path, node in numbers if not {"maximum", "minimum"} <= node.keys()]
    assert unbounded == []
    # The API server reads bounds as float64, and refuses an integer's that is no exact integer there
    # (int64's maximum, 2^63 - 1, rounds up to 2^63).
    inexact = [
        path
        for path, node in numbers
        if node["type"] == "integer" and any(int(float(node[k])) != node[k] for k in ("minimum", "maximum"))
    ]
    assert inexact == []
