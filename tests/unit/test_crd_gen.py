"""tooling.crd_gen turns pydantic models into a structural CRD schema, and refuses, naming the field,
what has no structural equivalent."""

from __future__ import annotations

import dataclasses
from typing import Annotated

import pytest
from pydantic import BaseModel, ConfigDict, Field

from modelgate.api import resource
from modelgate.api.markers import NULLABLE, CelRule, cel_rules, list_map
from tooling import crd_gen


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Limits(Model):
    """Limits of one thing."""

    low: int = 1
    high: int = 9


class Item(Model):
    """One item."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule("self.size > 0", field_path=".size", message_expression="'item ' + self.key + ': empty'")
        )
    )

    key: Annotated[str, Field(max_length=8)] = Field(description="The key.")
    size: int = 0


class Sample(Model):
    """A sample object."""

    name: str = Field(description="Its name,\n    wrapped.")
    value: float | None = Field(None, description="A value.", json_schema_extra=NULLABLE)
    note: str | None = None
    limits: Limits = Field(Limits(), description="Overrides the docstring.")
    tuned: Limits = Limits(high=5)
    labels: dict[str, str] = {}
    items: tuple[Item, ...] = Field((), max_length=4, json_schema_extra=list_map("key"))


class Other(Model):
    other: int


class WithUnion(Model):
    either: Limits | Other


def test_a_model_becomes_a_structural_schema() -> None:
    schema = crd_gen.model_schema(Sample, "sample")
    properties = schema["properties"]
    assert schema["type"] == "object"
    assert schema["description"] == "A sample object."
    assert "additionalProperties" not in schema  # pruning, not `false`
    assert "title" not in schema and "title" not in properties["name"]
    assert schema["required"] == ["name"]
    assert properties["name"]["description"] == "Its name, wrapped."
    assert properties["value"] == {"type": "number", "nullable": True, "description": "A value."}
    assert properties["note"] == {"type": "string"}  # optional: neither null nor a default
    assert properties["limits"]["description"] == "Overrides the docstring."
    assert properties["limits"]["default"] == {}  # the API server fills in low and high
    assert properties["tuned"]["default"] == {"high": 5}
    labels = {"type": "object", "default": {}, "additionalProperties": {"type": "string"}}
    assert properties["labels"] == labels


def test_list_types_and_cel_rules_are_copied_rule_first() -> None:
    items = crd_gen.model_schema(Sample, "sample")["properties"]["items"]
    assert items["x-kubernetes-list-type"] == "map"
    assert items["x-kubernetes-list-map-keys"] == ["key"]
    assert items["maxItems"] == 4
    (rule,) = items["items"]["x-kubernetes-validations"]
    assert list(rule) == ["rule", "messageExpression", "fieldPath"]


def test_keywords_come_in_the_crd_order() -> None:
    key = crd_gen.model_schema(Item, "item")["properties"]["key"]
    assert list(key) == ["type", "description", "maxLength"]


def test_a_union_of_two_types_is_refused_naming_the_field() -> None:
    with pytest.raises(crd_gen.SchemaError, match=r"^with\.either: a union of several types"):
        crd_gen.model_schema(WithUnion, "with")


def test_a_keyword_without_a_crd_equivalent_is_refused_naming_the_field() -> None:
    class Odd(Model):
        count: int = Field(0, gt=-1)  # JSON Schema's numeric exclusiveMinimum; OpenAPI v3.0's is a boolean

    refused = r"^odd\.count: no CRD equivalent for \['exclusiveMinimum'\]"
    with pytest.raises(crd_gen.SchemaError, match=refused):
        crd_gen.model_schema(Odd, "odd")


def test_a_printer_column_must_name_a_field() -> None:
    renamed = resource.PrinterColumn("Weight", "integer", ".status.weight", "Renamed.")
    kind = dataclasses.replace(crd_gen.ROLLOUT, columns=(*crd_gen.ROLLOUT.columns, renamed))
    with pytest.raises(crd_gen.SchemaError, match=r"printer column Weight: \.status\.weight names no field"):
        crd_gen.build_crd(kind)


def test_a_cel_rule_needs_exactly_one_message() -> None:
    with pytest.raises(ValueError, match="set exactly one of message or message_expression"):
        CelRule("self.a > 0")
    with pytest.raises(ValueError, match="set exactly one of message or message_expression"):
        CelRule("self.a > 0", message="a", message_expression="'a'")
