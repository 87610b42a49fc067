"""The dependency audit of `make test`: what counts as a pass, a failure, or a service that could not
be asked; and that the lock it audits pins every dependency pyproject.toml declares."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path

from tooling.dependency_audit import Audit, read_report

REPO = Path(__file__).resolve().parents[2]


def report(*dependencies: Mapping[str, object]) -> str:
    return json.dumps({"dependencies": list(dependencies), "fixes": []})


def test_a_known_vulnerability_is_reported_by_dependency_and_id() -> None:
    found = read_report(
        report(
            {"name": "aiohttp", "version": "3.9.0", "vulns": [{"id": "GHSA-1"}, {"id": "PYSEC-2"}]},
            {"name": "pyyaml", "version": "6.0.3", "vulns": []},
        ),
        "",
    )
    assert found == Audit(vulnerable=("aiohttp 3.9.0: GHSA-1, PYSEC-2",), audited=2)


def test_a_service_that_skipped_every_dependency_audited_nothing() -> None:
    skipped = {"name": "pyyaml", "skip_reason": "Dependency not found on PyPI and could not be audited"}
    found = read_report(report(skipped), "")
    assert found.unavailable is not None and "not found on PyPI" in found.unavailable


def test_some_skipped_dependencies_still_make_an_audit() -> None:
    found = read_report(
        report(
            {"name": "modelgate", "skip_reason": "not on PyPI"},
            {"name": "pyyaml", "version": "6.0.3", "vulns": []},
        ),
        "",
    )
    assert found == Audit(audited=1)


def test_a_crash_is_a_service_that_could_not_be_asked() -> None:
    found = read_report("", "Traceback ...\nrequests.exceptions.ConnectionError: cannot resolve\n")
    assert found.unavailable == "requests.exceptions.ConnectionError: cannot resolve"


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert match is not None, requirement
    return match.group(0).lower().replace("_", "-")


def test_the_lock_pins_every_declared_dependency() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = {_name(r) for r in [*project["dependencies"], *project["optional-dependencies"]["dev"]]}
    lock = (REPO / "requirements.lock").read_text()
    pinned = {_name(line) for line in lock.splitlines() if "==" in line and not line.startswith(" ")}
    assert declared - pinned == set(), "run `make lock`"
