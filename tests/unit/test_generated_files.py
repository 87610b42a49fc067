"""The CRD, the chart's copy and docs/api-reference.md are written by `make generate` from the models
in modelgate.api; the committed files must be what it writes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tooling import crd_gen, docs_gen

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "run `make generate` and commit the result"


def test_committed_crds_are_generated() -> None:
    for path, content in crd_gen.generated_files().items():
        committed = (ROOT / path).read_text()
        assert committed == content, f"{path} differs from what `make generate` writes: {REGENERATE}"


def test_committed_api_reference_is_generated() -> None:
    # Rendered from the generated CRD, not the committed one, so a stale CRD cannot hide a stale page.
    expected = docs_gen.render_api_reference(crd_gen.build_crd())
    committed = (ROOT / docs_gen.API_REFERENCE).read_text()
    assert committed == expected, (
        f"{docs_gen.API_REFERENCE} differs from what `make generate` writes: {REGENERATE}"
    )


def test_the_yaml_reads_back_as_the_crd_built() -> None:
    # Folded descriptions and quoted CEL rules must lose nothing, not even a space.
    crd = crd_gen.build_crd()
    assert yaml.load(crd_gen.render_crd(crd), Loader=yaml.CSafeLoader) == crd


def test_the_yaml_says_it_is_generated() -> None:
    text = crd_gen.render_crd(crd_gen.build_crd())
    assert text.startswith("# ")
    assert "`make generate`" in text.split("apiVersion:")[0]


def test_check_mode_reports_and_write_mode_fixes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = ["--root", str(tmp_path)]
    assert crd_gen.main(["--check", *root]) == 1
    assert crd_gen.main(root) == 0
    for path in (crd_gen.CRD_FILE, crd_gen.CHART_CRD_FILE):
        assert (tmp_path / path).read_text() == (ROOT / path).read_text()
    (tmp_path / crd_gen.CHART_CRD_FILE).write_text("stale\n")
    capsys.readouterr()
    assert crd_gen.main(["--check", *root]) == 1
    assert f"{crd_gen.CHART_CRD_FILE} is out of date: run `make generate`" in capsys.readouterr().err
    assert crd_gen.main(root) == 0
    assert crd_gen.main(["--check", *root]) == 0


def test_getting_started_shows_what_modelgate_status_prints() -> None:
    # Rendered by the CLI's renderer from examples/rollout-good.yaml: a change to either makes it stale.
    expected = docs_gen.generated_files(ROOT)[docs_gen.GETTING_STARTED]
    committed = (ROOT / docs_gen.GETTING_STARTED).read_text()
    assert committed == expected, f"{docs_gen.GETTING_STARTED}'s status sample is stale: {REGENERATE}"
