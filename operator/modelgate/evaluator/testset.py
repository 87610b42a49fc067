"""Test sets: JSONL, a header line naming the set, then one item per line.

    {"testSet": {"name": "qa", "version": "2026-11-28", "date": "2026-11-28T00:00:00Z"}}
    {"id": "m1", "capability": "math", "prompt": "What is 6 x 7?", "check": {"number": 42}}

An item's check is exactly one of `exact`, `regex`, `jsonSchema` or `number` (with an optional
`tolerance`). An optional `reference` is a right answer: it must pass the item's own check, and the
model-server doubles answer it when they are to answer the item right.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from modelgate.api.gate_result import TestSetIdentity
from modelgate.evaluator.answer_checks import Check, ExactCheck, JsonSchemaCheck, NumberCheck, RegexCheck
from modelgate.evaluator.jsonl import InputError, json_lines, parse_line

# Score names starting so are the replay's figures.
RESERVED_PREFIX = "replay-"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class _Header(_Strict):
    test_set: TestSetIdentity = Field(alias="testSet")

    @field_validator("test_set")
    @classmethod
    def _dated_with_zone(cls, identity: TestSetIdentity) -> TestSetIdentity:
        if identity.date.tzinfo is None:
            raise ValueError("date needs a time zone, such as 2026-11-28T00:00:00Z")
        return identity


class _CheckSpec(_Strict):
    exact: str | None = None
    regex: str | None = None
    json_schema: dict[str, Any] | None = Field(None, alias="jsonSchema")
    number: float | None = Field(None, allow_inf_nan=False)
    tolerance: float | None = Field(None, ge=0, allow_inf_nan=False)

    @field_validator("regex")
    @classmethod
    def _compiles(cls, pattern: str | None) -> str | None:
        if pattern is not None:
            RegexCheck.of(pattern)
        return pattern

    @field_validator("json_schema")
    @classmethod
    def _valid_schema(cls, schema: dict[str, Any] | None) -> dict[str, Any] | None:
        if schema is not None:
            JsonSchemaCheck.of(schema)
        return schema

    @model_validator(mode="after")
    def _one_kind(self) -> _CheckSpec:
        given = [name for name in ("exact", "regex", "jsonSchema", "number") if self._value(name) is not None]
        if len(given) != 1:
            raise ValueError(
                f"exactly one of exact, regex, jsonSchema, number expected, got {given or 'none'}"
            )
        if self.tolerance is not None and self.number is None:
            raise ValueError("tolerance goes only with number")
        return self

    def _value(self, name: str) -> object:
        return self.json_schema if name == "jsonSchema" else getattr(self, name)

    def compiled(self) -> Check:
        if self.exact is not None:
            return ExactCheck(self.exact)
        if self.regex is not None:
            return RegexCheck.of(self.regex)
        if self.json_schema is not None:
            return JsonSchemaCheck.of(self.json_schema)
        assert self.number is not None  # _one_kind
        return NumberCheck(self.number, self.tolerance or 0.0)

    def default_reference(self) -> str | None:
        if self.exact is not None:
            return self.exact
        return None if self.number is None else f"{self.number:g}"


class _ItemSpec(_Strict):
    id: str = Field(min_length=1, max_length=253)
    capability: str = Field(min_length=1, max_length=63, pattern=r"^[A-Za-z0-9][-A-Za-z0-9_.]*$")
    prompt: str = Field(min_length=1)
    check: _CheckSpec
    reference: str | None = None

    @field_validator("capability")
    @classmethod
    def _not_reserved(cls, capability: str) -> str:
        if capability.startswith(RESERVED_PREFIX):
            raise ValueError(f"names starting with {RESERVED_PREFIX!r} are the replay's scores")
        return capability


@dataclass(frozen=True)
class Item:
    id: str
    capability: str
    prompt: str
    check: Check
    reference: str | None  # a right answer, when the set gives one or the check implies one


@dataclass(frozen=True)
class TestSet:
    __test__ = False  # not a pytest class

    identity: TestSetIdentity
    items: tuple[Item, ...]

    def capabilities(self) -> list[str]:
        """The capability tags, in the order they first appear."""
        return list(dict.fromkeys(item.capability for item in self.items))


def parse_test_set(text: str, source: str) -> TestSet:
    lines = json_lines(text, source)
    first = next(lines, None)
    if first is None:
        raise InputError(f'{source}: empty; the first line must be the header {{"testSet": {{...}}}}')
    number, header = first
    if "testSet" not in header:
        raise InputError(
            f"{source}, line {number}: testSet: the first line must be the header "
            '{"testSet": {"name": ..., "version": ..., "date": ...}}'
        )
    identity = parse_line(_Header, header, f"{source}, line {number}").test_set
    items: list[Item] = []
    seen: dict[str, int] = {}
    for number, value in lines:
        where = f"{source}, line {number}"
        items.append(_item(parse_line(_ItemSpec, value, where), where))
        if (earlier := seen.setdefault(items[-1].id, number)) != number:
            raise InputError(f"{where}: id: {items[-1].id!r} is already the id of line {earlier}")
    if not items:
        raise InputError(f"{source}: no items after the header")
    return TestSet(identity, tuple(items))


def _item(spec: _ItemSpec, where: str) -> Item:
    check = spec.check.compiled()
    reference = spec.reference if spec.reference is not None else spec.check.default_reference()
    if spec.reference is not None and not check.passes(spec.reference):
        raise InputError(f"{where}: reference: does not pass the item's own check")
    return Item(spec.id, spec.capability, spec.prompt, check, reference)
