"""The CRD's schema and the pydantic models must describe the same fields with the same constraints.

Both are written by hand; this test walks them side by side and reports every disagreement by path.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus

CRD_PATH = Path(__file__).resolve().parents[2] / "crds" / "modelrollouts.modelgate.io.yaml"

# Keywords whose values must be equal whenever either side sets them.
CONSTRAINTS = (
    "type",
    "enum",
    "format",
    "pattern",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
)

Schema = dict[str, Any]


def crd_root_schema() -> Schema:
    (version,) = yaml.safe_load(CRD_PATH.read_text())["spec"]["versions"]
    schema: Schema = version["schema"]["openAPIV3Schema"]
    return schema


def model_schema(model: type[BaseModel]) -> Schema:
    """The model's JSON schema in the CRD's shape: $refs inlined, `X | None` unwrapped to X."""
    schema = model.model_json_schema(by_alias=True)
    return _inline(schema, schema.get("$defs", {}))


def _inline(node: Any, defs: Schema) -> Any:
    if isinstance(node, list):
        return [_inline(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _inline(value, defs) for key, value in node.items() if key != "$defs"}
    if "$ref" in node:
        target = defs[node.pop("$ref").removeprefix("#/$defs/")]
        node = _inline(target, defs) | node
    branches = node.get("anyOf", [])
    if len(branches) == 2 and {"type": "null"} in branches:
        node.pop("anyOf")
        (value_branch,) = [branch for branch in branches if branch != {"type": "null"}]
        node = value_branch | node | {"allowsNull": True}
    return node


def with_defaults(schema: Schema, value: Any) -> Any:
    """`value` as the API server stores it: an object's missing properties get their defaults."""
    if not isinstance(value, dict):
        return value
    filled = dict(value)
    for name, prop in schema.get("properties", {}).items():
        if name not in filled and "default" in prop:
            filled[name] = prop["default"]
        if name in filled:
            filled[name] = with_defaults(prop, filled[name])
    return filled


def mismatches(crd: Schema, model: Schema, path: str) -> list[str]:
    found = [
        f"{path}: {keyword} is {crd.get(keyword)!r} in the CRD but {model.get(keyword)!r} in the models"
        for keyword in CONSTRAINTS
        if crd.get(keyword) != model.get(keyword)
    ]
    crd_default = with_defaults(crd, crd["default"]) if "default" in crd else None
    if crd_default != model.get("default"):  # a model default of None means "no default"
        found.append(
            f"{path}: default is {crd_default!r} in the CRD but {model.get('default')!r} in the models"
        )
    if crd.get("nullable") and not model.get("allowsNull"):
        found.append(f"{path}: nullable in the CRD but not in the models")
    if set(crd.get("required", ())) != set(model.get("required", ())):
        found.append(
            f"{path}: required is {sorted(crd.get('required', ()))} in the CRD "
            f"but {sorted(model.get('required', ()))} in the models"
        )
    crd_properties, model_properties = crd.get("properties", {}), model.get("properties", {})
    for name in sorted(crd_properties.keys() - model_properties.keys()):
        found.append(f"{path}.{name}: in the CRD but not in the models")
    for name in sorted(model_properties.keys() - crd_properties.keys()):
        found.append(f"{path}.{name}: in the models but not in the CRD")
    for name in crd_properties.keys() & model_properties.keys():
        found += mismatches(crd_properties[name], model_properties[name], f"{path}.{name}")
    if "items" in crd or "items" in model:
        found += mismatches(crd.get("items", {}), model.get("items", {}), f"{path}[]")
    return found


def compare_with_models(crd_root: Schema) -> list[str]:
    properties = crd_root["properties"]
    return mismatches(properties["spec"], model_schema(ModelRolloutSpec), "spec") + mismatches(
        properties["status"], model_schema(ModelRolloutStatus), "status"
    )


def test_crd_and_models_agree() -> None:
    assert compare_with_models(crd_root_schema()) == []


def _at(schema: Schema, path: str) -> Schema:
    node = schema
    for name in path.split("."):
        node = node["items"] if name == "[]" else node["properties"][name]
    return node


def _rename(path: str, old: str, new: str) -> Callable[[Schema], None]:
    def alter(schema: Schema) -> None:
        properties = _at(schema, path)["properties"]
        properties[new] = properties.pop(old)

    return alter


def _put(path: str, keyword: str, value: Any) -> Callable[[Schema], None]:
    def alter(schema: Schema) -> None:
        _at(schema, path)[keyword] = value

    return alter


def _drop(path: str, keyword: str) -> Callable[[Schema], None]:
    def alter(schema: Schema) -> None:
        del _at(schema, path)[keyword]

    return alter


ALTERATIONS = {
    "renamed field": (_rename("spec.steps.[]", "setWeight", "weight"), "spec.steps[].weight: in the CRD but"),
    "missing field": (
        _drop("spec.trafficRouting.gatewayAPI", "properties"),
        "spec.trafficRouting.gatewayAPI.httpRoute: in the models but not in the CRD",
    ),
    "changed bound": (
        _put("spec.steps.[].setWeight", "maximum", 99),
        "spec.steps[].setWeight: maximum is 99",
    ),
    "bound on one side": (
        _put("spec.analysis.minRequests", "maximum", 9),
        "spec.analysis.minRequests: maximum",
    ),
    "changed default": (_put("spec.analysis.interval", "default", "1m"), "spec.analysis.interval: default"),
    "nested default": (
        _put("spec.rollback.maxConsecutiveErrors", "default", 5),
        "spec.rollback: default is {'onPrometheusError': 'pause', 'maxConsecutiveErrors': 5}",
    ),
    "extra enum value": (
        _put("spec.analysis.metrics.[].preset", "enum", ["errorRate", "latencyP99", "refusalRate", "x"]),
        "spec.analysis.metrics[].preset: enum",
    ),
    "status enum": (
        _put("status.phase", "enum", ["Pending", "Progressing"]),
        "status.phase: enum",
    ),
    "changed required": (
        _put("spec.analysis.metrics.[]", "required", ["name", "max"]),
        "spec.analysis.metrics[]: required",
    ),
    "changed type": (_put("status.currentWeight", "type", "number"), "status.currentWeight: type"),
    "changed pattern": (
        _put("spec.candidate.deployment", "pattern", "^.*$"),
        "spec.candidate.deployment: pattern",
    ),
    "nullable in the CRD only": (
        _put("status.currentWeight", "nullable", True),
        "status.currentWeight: nullable",
    ),
    "changed list bound": (
        _put("status.analysis.[].history", "maxItems", 20),
        "status.analysis[].history: maxItems",
    ),
}


@pytest.mark.parametrize(("alter", "expected"), ALTERATIONS.values(), ids=ALTERATIONS.keys())
def test_comparator_reports_an_altered_crd(alter: Callable[[Schema], None], expected: str) -> None:
    schema = copy.deepcopy(crd_root_schema())
    alter(schema)
    found = compare_with_models(schema)
    assert any(mismatch.startswith(expected) for mismatch in found), found
