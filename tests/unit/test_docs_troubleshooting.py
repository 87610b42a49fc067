"""docs/troubleshooting.md describes every reason the operator gives (Events, conditions, rollback
causes), every condition type and every phase. The reasons come from their enums, the only
spellings the operator uses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from modelgate.api import Phase
from modelgate.core import ConditionType, Reason

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "troubleshooting.md"


def documented(doc: str, name: str) -> bool:
    return re.search(rf"`{re.escape(name)}`", doc) is not None


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text()


def test_every_reason_is_documented(doc: str) -> None:
    missing = [reason.value for reason in Reason if not documented(doc, reason.value)]
    assert not missing, f"describe these reasons in {DOC.relative_to(ROOT)}: {', '.join(missing)}"


def test_every_warning_is_listed_as_a_warning(doc: str) -> None:
    """The Events table gives each reason's type as the operator records it."""
    rows = dict(re.findall(r"^\| `(\w+)` \| (Normal|Warning) \|", doc, re.MULTILINE))
    wrong = {
        reason.value for reason in Reason if reason.value in rows and rows[reason.value] != reason.event_type
    }
    assert not wrong, f"these reasons have another Event type in {DOC.relative_to(ROOT)}: {sorted(wrong)}"


def test_every_condition_type_is_documented(doc: str) -> None:
    missing = [t.value for t in ConditionType if not documented(doc, t.value)]
    assert not missing, f"describe these condition types in {DOC.relative_to(ROOT)}: {missing}"


def test_every_phase_is_documented(doc: str) -> None:
    missing = [phase.value for phase in Phase if f"| `{phase.value}` |" not in doc]
    assert not missing, f"add these phases to the table of phases in {DOC.relative_to(ROOT)}: {missing}"
