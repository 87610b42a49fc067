"""The dependency audit of `make test`: what counts as a pass, a failure, or a service that could not
be asked; a lock without hashes fails before any service is asked."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pytest

from tooling import dependency_audit
from tooling.dependency_audit import Audit, read_report


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


def test_a_lock_with_an_unhashed_pin_fails_without_asking_a_service(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_service(lock: Path, service: str) -> Audit:
        raise AssertionError("a service was asked about a lock that pip would refuse")

    monkeypatch.setattr(dependency_audit, "audit", no_service)
    lock = tmp_path / "requirements.lock"
    lock.write_text(f"pyyaml==6.0.3 \\\n    --hash=sha256:{'a' * 64}\n    # via x\nidna==3.20\n")
    assert dependency_audit.main([str(lock)]) == 1
    assert "idna==3.20" in capsys.readouterr().out
