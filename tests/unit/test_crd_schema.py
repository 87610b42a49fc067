"""The CRD file itself: names from the contract, a structural schema, and bounds the CEL cost budget needs.

What the CEL rules accept and reject belongs to tests against a real API server (tests/cluster).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

CRD_PATH = Path(__file__).resolve().parents[2] / "crds" / "modelrollouts.modelgate.io.yaml"


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(CRD_PATH.read_text())
    return loaded


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


def test_names_follow_the_contract(crd: dict[str, Any]) -> None:
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["metadata"]["name"] == "modelrollouts.modelgate.io"
    assert crd["spec"]["group"] == "modelgate.io"
    assert crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"] == {
        "kind": "ModelRollout",
        "listKind": "ModelRolloutList",
        "plural": "modelrollouts",
        "singular": "modelrollout",
        "shortNames": ["mro"],
        "categories": ["modelgate"],
    }
    (version,) = crd["spec"]["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1alpha1", True, True)
    assert version["subresources"] == {"status": {}}


def test_printer_columns(crd: dict[str, Any]) -> None:
    columns = [
        (c["name"], c["type"], c["jsonPath"]) for c in crd["spec"]["versions"][0]["additionalPrinterColumns"]
    ]
    assert columns == [
        ("Phase", "string", ".status.phase"),
        ("Weight", "integer", ".status.currentWeight"),
        ("Step", "integer", ".status.currentStepIndex"),
        ("Incumbent", "string", ".spec.incumbent.deployment"),
        ("Candidate", "string", ".spec.candidate.deployment"),
        ("Age", "date", ".metadata.creationTimestamp"),
        ("Message", "string", ".status.message"),
    ]


def test_schema_is_structural(crd: dict[str, Any]) -> None:
    for path, node in spec_and_status_nodes(crd):
        assert "type" in node, f"{path} has no type"
        assert "x-kubernetes-preserve-unknown-fields" not in node, f"{path} keeps unknown fields"
        assert not {"anyOf", "oneOf", "allOf", "not", "additionalProperties"} & node.keys(), path


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


def test_every_rule_explains_itself(crd: dict[str, Any]) -> None:
    rules = [
        rule for _, node in spec_and_status_nodes(crd) for rule in node.get("x-kubernetes-validations", [])
    ]
    assert len(rules) == 11
    for rule in rules:
        assert "message" in rule or "messageExpression" in rule, rule["rule"]
