"""Whether an answer passes an item's check. Pure: text in, a verdict out.

Every check reads the answer with surrounding whitespace stripped:
- exact: equal to the expected text (also stripped);
- regex: the pattern is searched in the answer (anchor it with ^ and $ to match the whole);
- jsonSchema: the answer (or the one fenced code block it consists of) is JSON valid under the schema;
- number: the last number in the answer is within tolerance of the expected number.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Protocol

from jsonschema import SchemaError
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for

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
        return cls(validator_class(schema))

    def passes(self, answer: str) -> bool:
        text = answer.strip()
        fenced = _FENCED.match(text)
        try:
            document = json.loads(fenced.group(1) if fenced else text)
        except ValueError:
            return False
        return bool(self.validator.is_valid(document))


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
