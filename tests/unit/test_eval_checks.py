"""The evaluator's checks: what passes and what fails each kind."""

from __future__ import annotations

import pytest

from modelgate.evaluator.answer_checks import Check, ExactCheck, JsonSchemaCheck, NumberCheck, RegexCheck

PERSON = {
    "type": "object",
    "required": ["name", "age"],
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
}


@pytest.mark.parametrize(
    ("check", "answer", "passes"),
    [
        (ExactCheck("42"), " 42\n", True),
        (ExactCheck("42"), "42.", False),
        (ExactCheck("Paris"), "paris", False),
        (RegexCheck.of(r"^4\d$"), "42", True),
        (RegexCheck.of(r"^4\d$"), "142", False),
        (RegexCheck.of(r"def"), "use def to define", True),
        (JsonSchemaCheck.of(PERSON), '{"name": "Ada", "age": 36}', True),
        (JsonSchemaCheck.of(PERSON), '```json\n{"name": "Ada", "age": 36}\n```', True),
        (JsonSchemaCheck.of(PERSON), '{"name": "Ada", "age": "36"}', False),
        (JsonSchemaCheck.of(PERSON), "Ada is 36", False),
        (NumberCheck(42), "The answer is 42.", True),
        (NumberCheck(42), "6 x 7 = 42", True),
        (NumberCheck(42), "42 or maybe 41", False),  # the last number counts
        (NumberCheck(1.41, 0.005), "about 1.414", True),
        (NumberCheck(1.41, 0.005), "about 1.42", False),
        (NumberCheck(-3), "it is -3", True),
        (NumberCheck(2), "model v2 says nothing", False),  # a digit inside a word is no number
        (NumberCheck(1000), "1e3", True),
    ],
)
def test_a_check_passes_exactly_the_answers_it_describes(check: Check, answer: str, passes: bool) -> None:
    assert check.passes(answer) is passes


def test_an_invalid_regex_or_schema_says_why() -> None:
    with pytest.raises(ValueError, match="not a regular expression"):
        RegexCheck.of("(")
    with pytest.raises(ValueError, match="not a valid JSON schema"):
        JsonSchemaCheck.of({"type": 5})
