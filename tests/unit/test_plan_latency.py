"""`modelgate plan`'s estimate for the latency form (cli/plan/latency_estimate.py): the evaluation at which
the operator's own bounds on the expected bucket counts decide, checked against the seeded
simulation of docs/statistics.md's table (tooling/latency_sim.py)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelgate.cli import main
from modelgate.cli.plan import latency_estimate
from modelgate.cli.plan.assumptions import LATENCY_ANNOTATION
from modelgate.cli.plan.plan import EXIT_NOTHING_TO_PLAN, EXIT_OK, EXIT_USAGE
from modelgate.cli.target import read_manifest
from tests.unit.test_plan import EXAMPLES, write_rollout
from tooling import latency_sim

RULE = latency_estimate.Comparison(latency_estimate.TTFT_GRID, 0.99, 0.05, max_ratio=1.2, margin=1.5)
INCUMBENT = latency_estimate.exceedance_at(0.057, 0.99, latency_estimate.TTFT_GRID)


def test_the_estimate_is_near_the_simulated_median_to_fail_and_not_before_it_to_pass() -> None:
    for row in latency_sim.sizing_rows():
        for fail in row.fails:
            assert fail.estimate is not None and abs(fail.estimate - fail.median) <= 1, row
        assert row.passes.estimate is not None and row.passes.estimate >= row.passes.median, row
        assert row.rolled_back <= latency_sim.ALPHA


def test_a_candidate_as_fast_as_the_incumbent_never_fails_and_twice_as_slow_fails_at_once() -> None:
    assert latency_estimate.looks_to_fail(RULE, INCUMBENT, INCUMBENT, 600, 0.1) is None
    slower = latency_estimate.exceedance_at(0.057, 0.99, latency_estimate.TTFT_GRID, slowdown=2.0)
    assert latency_estimate.looks_to_fail(RULE, slower, INCUMBENT, 600, 0.1) == 1
    assert latency_estimate.looks_to_fail(RULE, slower, INCUMBENT, 600, 0.0) is None  # no candidate traffic


def test_a_larger_share_passes_sooner_up_to_half_and_no_margin_never_passes() -> None:
    looks = [latency_estimate.looks_to_pass(RULE, INCUMBENT, 600, share) for share in (0.05, 0.1, 0.25, 0.5)]
    assert all(n is not None for n in looks)
    assert looks == sorted(looks, reverse=True) and looks[0] != looks[-1]
    no_margin = latency_estimate.Comparison(RULE.grid, RULE.quantile, RULE.alpha, max_ratio=1.2, margin=None)
    assert latency_estimate.looks_to_pass(no_margin, INCUMBENT, 600, 0.5) is None


def test_the_quantile_is_where_it_is_asked_to_be() -> None:
    p99 = latency_estimate.exceedance_at(0.07, 0.99, (0.07,))
    p50 = latency_estimate.exceedance_at(0.07, 0.5, (0.07,))
    assert math.isclose(p99[0], 0.01, rel_tol=1e-4) and math.isclose(p50[0], 0.5, rel_tol=1e-9)


TTFT_FORM = {
    "name": "ttft",
    "preset": "ttftP99",
    "compare": {"maxRatio": 1.2, "confidence": {"alpha": 0.05, "margin": 1.5}},
}
TRAFFIC = ["--rps", "20", "--base-rate", "0.01", "--runs", "5", "-o", "json"]


def planned_latency(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], metric: dict[str, Any], *arguments: str
) -> tuple[int, list[dict[str, Any]]]:
    path = write_rollout(tmp_path, metric)
    code = main(["plan", "-f", str(path), *TRAFFIC, *arguments])
    out = capsys.readouterr().out
    return code, json.loads(out)["latencyForm"] if out else []


def test_plan_estimates_the_latency_form_at_each_steps_share(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, (estimate,) = planned_latency(tmp_path, capsys, TTFT_FORM, "--latency", "ttftP99=0.057")
    assert code == EXIT_OK  # the latency form alone is something to plan
    assert estimate["incumbent_seconds"] == 0.057 and estimate["slowdown"] == 2.0
    first, second = estimate["steps"]
    assert (first["step"], first["share"], second["step"], second["share"]) == (0, 0.1, 1, 0.5)
    for step in (first, second):
        assert step["fail_seconds"] is not None and step["pass_seconds"] is not None
        assert step["fail_candidate_requests"] > 0 and step["pass_candidate_requests"] > 0
    assert second["pass_seconds"] <= first["pass_seconds"]


def test_plan_says_never_for_a_slowdown_below_max_ratio_and_zero_without_a_margin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    no_margin = TTFT_FORM | {"compare": {"maxRatio": 1.2, "confidence": {"alpha": 0.05}}}
    arguments = ("--latency", "ttftP99=0.057", "--regression", "1.05")
    code, (estimate,) = planned_latency(tmp_path, capsys, no_margin, *arguments)
    assert code == EXIT_OK
    assert all(s["fail_seconds"] is None and s["pass_seconds"] == 0.0 for s in estimate["steps"])


def test_without_the_incumbents_quantile_nothing_is_estimated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, (estimate,) = planned_latency(tmp_path, capsys, TTFT_FORM)
    assert code == EXIT_NOTHING_TO_PLAN
    assert estimate["incumbent_seconds"] is None and estimate["steps"] == []


@pytest.mark.parametrize("value", ["ttftP99=fast", "errorRate=0.1", "ttftP99=-1", "ttftP99"])
def test_a_latency_that_is_not_a_preset_and_positive_seconds_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    path = write_rollout(tmp_path, TTFT_FORM)
    assert main(["plan", "-f", str(path), *TRAFFIC, "--latency", value]) == EXIT_USAGE
    assert "--latency" in capsys.readouterr().err.replace("\n", "")
    path = write_rollout(tmp_path, TTFT_FORM, annotations={LATENCY_ANNOTATION: value})
    assert main(["plan", "-f", str(path), *TRAFFIC]) == EXIT_USAGE
    assert LATENCY_ANNOTATION in capsys.readouterr().err.replace("\n", "")


def test_the_latency_lines_fit_80_columns(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_rollout(tmp_path, TTFT_FORM, annotations={LATENCY_ANNOTATION: "ttftP99=0.057"})
    assert main(["plan", "-f", str(path), "--rps", "20", "--base-rate", "0.01", "--runs", "5"]) == EXIT_OK
    shown = [line for line in capsys.readouterr().out.splitlines() if "slower fails" in line]
    assert len(shown) == 2 and all(len(line) <= 80 for line in shown)


def test_the_latency_form_docs_plan_md_shows_is_what_plan_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --runs, as users run it: a rollout of the latency form alone has nothing to simulate."""
    text = (EXAMPLES.parent / "docs" / "plan.md").read_text()
    found = re.search(r"## The latency form\n.*?```text\n(.*?)```", text, re.S)
    assert found, "docs/plan.md shows no latency form"
    manifest = read_manifest(EXAMPLES / "rollout.yaml")
    manifest["spec"]["analysis"]["metrics"] = [TTFT_FORM]
    path = tmp_path / "rollout.yaml"
    path.write_text(yaml.safe_dump(manifest))
    assert main(["plan", "-f", str(path), "--latency", "ttftP99=0.057"]) == EXIT_OK
    printed = capsys.readouterr().out.splitlines()
    assert [line.rstrip() for line in printed if line.startswith(("latency form", "  step"))] == found.group(
        1
    ).splitlines()
