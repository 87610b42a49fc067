"""argocd/: the Argo CD health check and drift settings for ModelRollouts and their HTTPRoutes.

The Go harness in argocd/harness runs health.lua in gopher-lua set up the way Argo CD sets it up,
and the Application's jq expressions with gojq the way Argo CD's normalizer does; running it here
puts it in `make test`. The other tests tie argocd/ to the rest of the project: a health case for
every phase the CRD allows, fixtures the operator could have written, and the generated argocd-cm
patch carrying health.lua unchanged.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus

ROOT = Path(__file__).resolve().parents[2]
ARGOCD = ROOT / "argocd"
HARNESS = ARGOCD / "harness"
CRD_PATH = ROOT / "crds" / "modelrollouts.modelgate.io.yaml"
HEALTH_KEY = "resource.customizations.health.modelgate.io_ModelRollout"
ARGO_HEALTH_STATUSES = {"Healthy", "Progressing", "Suspended", "Degraded", "Missing", "Unknown"}
GO_TEST_TIMEOUT = 270  # seconds; below pytest's 300, so a slow first module download fails with output

Case = tuple[str, dict[str, Any], dict[str, Any]]  # inputPath, expected healthStatus, fixture


def test_go_harness_passes() -> None:
    go = shutil.which("go")
    if go is None:
        pytest.fail("go is not on PATH: argocd/harness tests the Argo CD health check with Go 1.26")
    # The environment passes through (GOFLAGS, GOPROXY, GOMODCACHE); after the first download of
    # the modules in go.sum it runs offline. -count=1: always run, never a cached result.
    result = subprocess.run(
        [go, "test", "-count=1", "./..."],
        cwd=HARNESS,
        capture_output=True,
        text=True,
        timeout=GO_TEST_TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, f"go test in {HARNESS} failed:\n{result.stdout}\n{result.stderr}"


@functools.cache
def crd_phases() -> list[str]:
    (version,) = yaml.load(CRD_PATH.read_text(), Loader=yaml.CSafeLoader)["spec"]["versions"]
    phases: list[str] = version["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]["phase"][
        "enum"
    ]
    return phases


def health_cases() -> list[Case]:
    tests = yaml.safe_load((ARGOCD / "health_test.yaml").read_text())["tests"]
    return [
        (case["inputPath"], case["healthStatus"], yaml.safe_load((ARGOCD / case["inputPath"]).read_text()))
        for case in tests
    ]


def is_current(fixture: dict[str, Any]) -> bool:
    """The status was written for the spec as it is, so the phase decides the health."""
    status = fixture.get("status") or {}
    return "phase" in status and status.get("observedGeneration") == fixture["metadata"].get("generation")


@pytest.mark.parametrize("phase", crd_phases())
def test_every_phase_has_a_health_case(phase: str) -> None:
    expected = [
        health["status"]
        for _, health, fixture in health_cases()
        if is_current(fixture) and fixture["status"]["phase"] == phase
    ]
    assert expected, (
        f"phase {phase} has no case in argocd/health_test.yaml: map it in argocd/health.lua, add a"
        " fixture to argocd/testdata and a case, then run python3 argocd/gen_cm_patch.py"
    )
    assert all(status in ARGO_HEALTH_STATUSES - {"Unknown"} for status in expected), (
        f"phase {phase} is expected to be {expected}: a phase the CRD allows must not be Unknown"
    )


def test_only_a_phase_the_crd_does_not_allow_is_unknown() -> None:
    phases = set(crd_phases())
    unknown = [
        (path, fixture["status"]["phase"])
        for path, health, fixture in health_cases()
        if health["status"] == "Unknown"
    ]
    assert unknown, "no case covers a phase this health check does not know"
    assert all(phase not in phases for _, phase in unknown), unknown


def test_fixtures_are_what_the_api_server_would_hold() -> None:
    for path, _, fixture in health_cases():
        assert fixture["apiVersion"] == "modelgate.io/v1alpha1" and fixture["kind"] == "ModelRollout", path
        ModelRolloutSpec.model_validate(fixture["spec"])
        status = fixture.get("status")
        if status is not None and status.get("phase") in crd_phases():
            ModelRolloutStatus.model_validate(status)


def test_cm_patch_embeds_health_lua_byte_for_byte() -> None:
    patch = yaml.safe_load((ARGOCD / "argocd-cm-patch.yaml").read_text(encoding="utf-8"))
    assert (patch["kind"], patch["metadata"]["name"]) == ("ConfigMap", "argocd-cm")
    embedded: str = patch["data"][HEALTH_KEY]
    lua = (ARGOCD / "health.lua").read_bytes()
    assert embedded.encode("utf-8") == lua, (
        "argocd-cm-patch.yaml is stale: run python3 argocd/gen_cm_patch.py"
    )


def test_cm_patch_is_what_the_generator_writes() -> None:
    result = subprocess.run(
        [sys.executable, str(ARGOCD / "gen_cm_patch.py"), "--check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr


def readme_health_table() -> dict[str, str]:
    """The first column of argocd/README.md's "What each health means" table, and its health."""
    section = (ARGOCD / "README.md").read_text().split("## What each health means", 1)[1].split("\n## ", 1)[0]
    rows = [line.strip("|").split("|") for line in section.splitlines() if line.startswith("| ")]
    return {cells[0].strip(): cells[1].strip() for cells in rows[2:]}  # after the header and ---


def test_the_readme_table_gives_each_phase_the_health_its_cases_expect() -> None:
    # The cases are what the harness runs health.lua on, so the table follows the script itself.
    table = readme_health_table()
    for phase in crd_phases():
        expected = {
            health["status"]
            for _, health, fixture in health_cases()
            if is_current(fixture) and fixture["status"]["phase"] == phase
        }
        assert phase in table, f"argocd/README.md's health table has no row for phase {phase}"
        assert {table[phase]} == expected, (
            f"argocd/README.md says {phase} is {table[phase]}, health.lua {expected}"
        )


def test_the_readme_table_names_only_healths_the_cases_reach() -> None:
    reached = {health["status"] for _, health, _ in health_cases()}
    assert set(readme_health_table().values()) == reached
