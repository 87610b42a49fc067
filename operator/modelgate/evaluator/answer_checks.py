"""Whether an answer passes an item's check. Pure: text in, a verdict out.

Every check reads the answer with surrounding whitespace stripped:
- exact: equal to the expected text (also stripped);
- regex: the pattern is searched in the answer (anchor it with ^ and $ to match the whole);
- jsonSchema: the answer (or the one fenced code block it consists of) is JSON valid under the schema,
  whose references are resolved inside it alone (`#/...`): nothing is fetched, from a URL or a file;
- number: the last number in the answer is within tolerance of the expected number.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from jsonschema import SchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from referencing import Registry
from referencing.exceptions import Unresolvable

# A decimal number, not a digit inside a word such as "v2" or "3fa9".
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?![\w])")
_FENCED = re.compile(r"^```[\w-]*\n(.*)\n```$", re.DOTALL)


class Check(Protocol):
    def passes(self, answer: str) -> bool: ...


@dataclass(frozen=True)
class ExactCheck:
    expected: str

    def passes(self, answer: str) -> bool:
        return answer.strip() == self.expected.strip()


@dataclass(frozen=True)
class RegexCheck:
    pattern: re.Pattern[str]

    @classmethod
    def of(cls, pattern: str) -> RegexCheck:
        try:
            return cls(re.compile(pattern))
        except re.error as error:
            raise ValueError(f"{pattern!r} is not a regular expression: {error}") from None

    def passes(self, answer: str) -> bool:
        return self.pattern.search(answer.strip()) is not None


@dataclass(frozen=True)
class JsonSchemaCheck:
    validator: Validator

    @classmethod
    def of(cls, schema: dict[str, Any]) -> JsonSchemaCheck:
        validator_class = validator_for(schema)
        try:
            validator_class.check_schema(schema)
        except SchemaError as error:
            raise ValueError(f"not a valid JSON schema: {error.message}") from None
        outside = next((ref for ref in _references(schema) if not ref.startswith("#")), None)
        if outside is not None:
            raise ValueError(
                f"$ref {outside[:100]!r}: only references inside the schema (#/...) are resolved"
            )
        # An empty registry: a reference that is not inside the schema fails, none is retrieved.
        return cls(validator_class(schema, registry=Registry()))

    def passes(self, answer: str) -> bool:
        text = answer.strip()
        fenced = _FENCED.match(text)
        try:
            document = json.loads(fenced.group(1) if fenced else text)
        except ValueError:
            return False
        try:
            return bool(self.validator.is_valid(document))
        except Unresolvable:  # a reference into a part of the schema that is not there
            return False


def _references(schema: object) -> Iterator[str]:
    """Every $ref and $dynamicRef in a schema, however deep."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("$ref", "$dynamicRef") and isinstance(value, str):
                yield value
            else:
                yield from _references(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _references(value)


@dataclass(frozen=True)
class NumberCheck:
    expected: float
    tolerance: float = 0.0

    def passes(self, answer: str) -> bool:
        numbers = _NUMBER.findall(answer.strip())
        if not numbers:
            return False
        value = float(numbers[-1])
        return math.isfinite(value) and abs(value - self.expected) <= self.tolerance
