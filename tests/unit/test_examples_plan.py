"""Examples that are right by default: every ModelRollout in examples/ states the traffic it is sized
for (annotations `modelgate plan` reads), and at that traffic `modelgate plan` finds that it rolls
back at most 5% of candidates as good as the incumbent and catches at least 80% of those failing
twice as often within the rollout; an example not meant to says why (modelgate.io/plan-exempt,
read by plan). The example docs/getting-started.md copies judges on evidence, and no example reads
the refusal sidecar's series without saying it needs the sidecar.

Each plan runs at plan's default number of seeded rollouts (the same figures every run; between
AUTO_RUNS.least and AUTO_RUNS.most, fewer for a long rollout), in seconds. A share's standard error
is sqrt(p (1 - p) / runs): at 100 runs, 2.2 points at the 5% bound and 4 points at the 80% bound; a
figure within two of them of its bound is a coin toss of the seed, and the failure message prints
the figures with their runs."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from modelgate.api import parse_spec
from modelgate.api.series import SeriesComponent
from modelgate.cli import main
from modelgate.cli.plan.assumptions import assumptions
from modelgate.cli.plan.figures import AUTO_RUNS
from modelgate.cli.plan.plan import EXIT_OK
from modelgate.cli.plan.traffic import simulable
from modelgate.cli.target import read_manifest
from modelgate.metrics.promql_plan import analysis_plan
from tests.unit.test_plan import EXAMPLES, rollouts_in_examples

MAX_FALSE_ROLLBACK = 0.05
MIN_CAUGHT = 0.80  # of candidates failing twice as often as the incumbent (plan's default regression)
DOCS = EXAMPLES.parent / "docs"
# At its default number of runs, a plan takes seconds (under 10 s each on an idle machine); before the
# default was bounded by the simulation's cost, a long example took minutes. Generous for a busy one.
PLAN_DEADLINE_SECONDS = 30


def example_id(path: Path) -> str:
    return str(path.relative_to(EXAMPLES))


@pytest.mark.parametrize("path", rollouts_in_examples(), ids=example_id)
def test_the_example_meets_the_plans_bounds_at_its_traffic_in_seconds_or_says_why_not(
    capsys: pytest.CaptureFixture[str], path: Path
) -> None:
    manifest = read_manifest(path)
    assumed = assumptions(manifest)
    if "analysis" not in manifest["spec"]:
        assert assumed.exempt, f"{path}: nothing to plan, and modelgate.io/plan-exempt does not say so"
        return
    assert assumed.requests_per_second is not None and assumed.base_rate is not None, (
        f"{path}: annotate modelgate.io/plan-rps and modelgate.io/plan-base-rate"
    )
    # An exempt example's figures are not held to the bounds: the fewest runs show the same shape.
    runs = ["--runs", str(AUTO_RUNS.least)] if assumed.exempt else []
    started = time.monotonic()
    code = main(["plan", "-f", str(path), "-o", "json", "--fail-above", str(MAX_FALSE_ROLLBACK), *runs])
    took = time.monotonic() - started
    captured = capsys.readouterr()
    plan = json.loads(captured.out)
    assert plan["exempt"] == assumed.exempt
    # Every metric is planned or listed with why; none is skipped in silence.
    planned = {f["name"] for f in plan["figures"]} - {"all planned metrics"}
    assert sorted(planned | {m["name"] for m in plan["notPlanned"]}) == sorted(
        m["name"] for m in manifest["spec"]["analysis"]["metrics"]
    )
    assert all(m["why"] for m in plan["notPlanned"])
    assert took < PLAN_DEADLINE_SECONDS, f"{path}: {took:.1f}s"
    # Not a terminal: one progress line per table on standard error, naming it.
    progress = captured.err.splitlines()
    assert all(f["name"] in line for f, line in zip(plan["figures"], progress, strict=True))
    for figures in plan["figures"]:
        assert AUTO_RUNS.least <= figures["runs"] <= AUTO_RUNS.most
        for share in ("false_rollback", "caught"):
            low, high = figures[f"{share}_interval"]
            assert low <= figures[share] <= high and high - low > 0
        assert all(0 <= figures[share] <= 1 for share in ("false_rollback", "caught", "promoted"))
    if assumed.exempt:
        return
    together = plan["figures"][-1]  # all planned metrics, or the only one
    figures = [(f["name"], f["false_rollback"], f["caught"], f["runs"]) for f in plan["figures"]]
    assert code == EXIT_OK, f"a false-rollback share above {MAX_FALSE_ROLLBACK}: {figures}"
    assert together["caught"] >= MIN_CAUGHT, f"a 2x regression caught too rarely: {figures}"


@pytest.mark.parametrize("path", rollouts_in_examples(), ids=example_id)
def test_an_example_that_reads_the_refusal_sidecar_says_it_needs_it(path: Path) -> None:
    spec = parse_spec(read_manifest(path)["spec"])
    if spec.analysis is None:
        return
    plan = analysis_plan(spec, "examples")
    needing = [
        name
        for name, metric in plan.metrics.items()
        if any(probe.exporter is SeriesComponent.REFUSAL_SIDECAR for probe in metric.series)
    ]
    if needing:
        assert "docs/refusal-sidecar.md" in path.read_text(), f"{path}: {needing} need the refusal sidecar"


def getting_started_example() -> Path:
    text = (DOCS / "getting-started.md").read_text()
    found = re.search(r"\*\*3\. The ModelRollout\.\*\* \[examples/([\w./-]+)\]", text)
    assert found, "docs/getting-started.md's step 3 names no example"
    return EXAMPLES / found.group(1)


def test_the_example_getting_started_copies_judges_rates_on_evidence_a_zero_error_service_can_pass(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = getting_started_example()
    manifest = read_manifest(path)
    spec = parse_spec(manifest["spec"])
    assert spec.analysis is not None and not assumptions(manifest).exempt
    planned = [m for m in spec.analysis.metrics if simulable(m) is None]
    assert planned, f"{path}: no metric on a share of requests"
    assert all(m.sequential is not None and m.sequential.margin_increase is not None for m in planned)
    assert main(["plan", "-f", str(path), "--runs", "5", "-o", "json"]) == EXIT_OK
    passes = json.loads(capsys.readouterr().out)["zeroErrorPass"]
    assert {p["metric"] for p in passes} == {m.name for m in planned}
    # A service without errors passes within the default inconclusive deadline (10 minutes).
    assert all(p["seconds"] is not None and p["seconds"] < 600 for p in passes), passes


def documented_plan() -> tuple[list[str], str]:
    """docs/plan.md's example: the command's arguments after `modelgate plan`, and its output."""
    text = (DOCS / "plan.md").read_text()
    found = re.search(r"```text\n\$ modelgate plan (.+?)\n(.*?)```", text, re.S)
    assert found, "docs/plan.md shows no plan"
    return found.group(1).split(), found.group(2)


def test_the_plan_docs_plan_md_shows_is_what_plan_prints(capsys: pytest.CaptureFixture[str]) -> None:
    arguments, shown = documented_plan()
    assert main(["plan", *arguments]) == EXIT_OK
    printed = capsys.readouterr().out
    assert [line.rstrip() for line in printed.splitlines()] == shown.splitlines(), printed
