"""The models agree with the CRD on every malformed ModelRollout of tests/support/bad_rollouts.py:
what the API server refuses, parse_spec refuses naming the same field (so a spec that never passed
through an API server gets the same answer), and what only the operator can see passes both."""

from __future__ import annotations

import pytest

from modelgate.api import InvalidSpecError, parse_spec
from tests.support.bad_rollouts import BAD_ROLLOUTS, UNKNOWN_FIELDS, valid_rollout

BY_API_SERVER = {name: row for name, row in BAD_ROLLOUTS.items() if not row.by_operator}
SPEC_ROWS = {
    name: row for name, row in BY_API_SERVER.items() if row.field.startswith("spec")
} | UNKNOWN_FIELDS
BY_OPERATOR = {name: row for name, row in BAD_ROLLOUTS.items() if row.by_operator}


def names_field(problem: str, field: str) -> bool:
    """`spec.steps[1]` is named by `spec.steps[1]: ...` and `spec.steps[1].pause: ...`, not by
    `spec.steps[10]: ...`."""
    return problem.startswith(field) and problem[len(field)] in ":.["


def test_the_valid_rollout_parses() -> None:
    parse_spec(valid_rollout("serving")["spec"])


@pytest.mark.parametrize("case", SPEC_ROWS, ids=list(SPEC_ROWS))
def test_the_models_refuse_what_the_api_server_refuses_naming_the_same_field(case: str) -> None:
    manifest = valid_rollout("serving")
    SPEC_ROWS[case].edit(manifest)
    with pytest.raises(InvalidSpecError) as refused:
        parse_spec(manifest["spec"])
    field, bound = SPEC_ROWS[case].field, SPEC_ROWS[case].bound
    named = [problem for problem in refused.value.problems if names_field(problem, field)]
    assert named, refused.value.problems
    assert bound is None or any(bound in problem for problem in named), named


@pytest.mark.parametrize("case", BY_OPERATOR, ids=list(BY_OPERATOR))
def test_what_only_the_operator_can_see_passes_the_models(case: str) -> None:
    manifest = valid_rollout("serving")
    BY_OPERATOR[case].edit(manifest)
    parse_spec(manifest["spec"])


def test_the_table_is_wide_enough() -> None:
    assert len(BAD_ROLLOUTS) >= 60
