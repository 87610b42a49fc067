"""tooling/tick_footprint.py counts the package's functions that one `decide()` runs through, and
only those: not what runs before it is entered, nor generated code."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from modelgate.core import decide
from modelgate.core.reasons import how_many, moment
from tooling import tick_footprint


def test_only_what_runs_inside_the_entry_is_counted() -> None:
    def call() -> None:
        moment(datetime(2026, 1, 1, tzinfo=UTC))  # before the entry: not counted
        how_many(2, "breach", "breaches")
        moment(datetime(2026, 1, 1, tzinfo=UTC))  # after it returned: not counted either

    found = tick_footprint.footprint(call, how_many.__code__)
    assert found.functions == {("modelgate.core.reasons", "how_many")}
    assert found.modules == ["modelgate.core.reasons"]


def test_one_decide_runs_through_the_engine_and_its_rules() -> None:
    found = tick_footprint.tick_footprint()
    assert ("modelgate.core.engine", "decide") in found.functions
    assert decide.__module__ in found.modules
    assert len(found.in_modules("modelgate.core")) >= 2
    assert all(module.startswith("modelgate.") for module in found.modules)
    assert not any("<" in name for _, name in found.functions), "generated code or a comprehension"


def test_the_command_prints_the_counts_and_the_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert tick_footprint.main([]) == 0
    lines = capsys.readouterr().out.splitlines()
    counted = re.search(r": (\d+) functions in (\d+) modules", lines[0])
    assert counted is not None
    functions, modules = int(counted.group(1)), int(counted.group(2))
    assert functions >= modules >= 1
    assert sum(1 for line in lines if line.startswith("modelgate.")) == modules
    assert max(len(line) for line in lines) <= 80
