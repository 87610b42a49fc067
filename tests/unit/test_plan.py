"""`modelgate plan`: its figures are the operator's own decisions on simulated traffic, so they must
match what an independent computation of the same rule on the same counts says: a binomial sum for
a rule judged once on known counts, an independent simulation of the sequential test's counts."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelgate.api import MetricSpec, ModelRolloutSpec, SequentialTest
from modelgate.cli import main
from modelgate.cli.plan.assumptions import BASE_RATE_ANNOTATION, RPS_ANNOTATION
from modelgate.cli.plan.figures import Figures, Runs, Traffic, figures, planned_spec, wilson_interval
from modelgate.cli.plan.plan import EXIT_COIN_TOSS, EXIT_NOTHING_TO_PLAN, EXIT_OK, EXIT_USAGE
from modelgate.cli.target import read_manifest
from modelgate.core.counted import zero_event_pass
from tests.unit.engine_support import analysis_spec, make_spec, timed_pause, weight
from tooling import sequential_sim

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# 40 requests/s, 10% to the candidate, judged once, 10 s after its weight was set, on a 1m window:
# 40 candidate requests, and the incumbent's 50 s alone (2,000) and 10 s at 90% (360).
RPS, CANDIDATE_REQUESTS, INCUMBENT_REQUESTS = 40.0, 40, 2360
RUNS = 800


def once_judged(metric: MetricSpec) -> ModelRolloutSpec:
    """One step, completed (or rolled back) by its one analysis, one interval after its weight was set."""
    return make_spec(weight(10), analysis=analysis_spec([metric], interval="10s", min_requests=20))


def binomial_pmf(n: int, p: float) -> list[float]:
    """Up to 200 events: beyond, at these rates, nothing is left to count."""
    log = math.lgamma
    return [
        math.exp(log(n + 1) - log(k + 1) - log(n - k + 1) + k * math.log(p) + (n - k) * math.log1p(-p))
        for k in range(min(n, 200) + 1)
    ]


def chance_of_breach(breaches: Any, p_candidate: float, p_incumbent: float) -> float:
    """Exactly: the chance the rule breaks on one window's counts, both sides binomial."""
    candidate, incumbent = (
        binomial_pmf(CANDIDATE_REQUESTS, p_candidate),
        binomial_pmf(INCUMBENT_REQUESTS, p_incumbent),
    )
    return sum(
        pi * pc
        for xi, pi in enumerate(incumbent)
        for xc, pc in enumerate(candidate)
        if breaches(xc / CANDIDATE_REQUESTS, xi / INCUMBENT_REQUESTS)
    )


def within_simulation_error(simulated: float, exact: float, runs: int) -> bool:
    return abs(simulated - exact) <= 4 * math.sqrt(exact * (1 - exact) / runs) + 1e-9


RULES = [
    # The issue's: a 0.2% candidate under max 0.02, minRequests 20, rolled back for one error.
    pytest.param({"max": 0.02}, 0.002, lambda c, i: c > 0.02, id="max"),
    pytest.param({"min": 0.01}, 0.02, lambda c, i: c < 0.01, id="min"),
    # The issue's: maxIncrease 0.02 at a 1% base rate on 40 requests, about 6% per evaluation.
    pytest.param({"compare": {"maxIncrease": 0.02}}, 0.01, lambda c, i: c > i + 0.02, id="maxIncrease"),
    pytest.param({"compare": {"maxRatio": 3}}, 0.01, lambda c, i: c > 3 * i, id="maxRatio"),
]


@pytest.mark.parametrize(("rule", "base_rate", "breaches"), RULES)
def test_a_rule_judged_once_rolls_back_as_often_as_the_binomial_says(
    rule: dict[str, Any], base_rate: float, breaches: Any
) -> None:
    metric = MetricSpec.model_validate({"name": "errors", "preset": "errorRate", **rule})
    traffic = Traffic(RPS, base_rate, regression=2.0)
    result = figures("errors", planned_spec(once_judged(metric), [metric]), traffic, RUNS, seed=7)
    false_rollback = chance_of_breach(breaches, base_rate, base_rate)
    caught = chance_of_breach(breaches, 2 * base_rate, base_rate)
    assert within_simulation_error(result.false_rollback, false_rollback, RUNS), (result, false_rollback)
    assert within_simulation_error(result.caught, caught, RUNS), (result, caught)
    assert result.steps[0].false_rollback == result.false_rollback  # the one step is where it happens
    if "maxIncrease" in rule.get("compare", {}):
        assert 0.04 < false_rollback < 0.08  # the "about 6% per evaluation"


def test_the_sequential_test_keeps_alpha_and_catches_as_its_counts_say() -> None:
    """Ten 10 s intervals at 10% of 60 requests/s. The independent simulation draws the same
    intervals' counts directly; the plan's rollouts may run longer (a sequential metric that waits
    for evidence holds its step), so it catches at least as often, never less."""
    metric = MetricSpec.model_validate(
        {"name": "errors", "preset": "errorRate", "sequential": {"alpha": 0.05}}
    )
    spec = make_spec(
        weight(10), timed_pause("100s"), analysis=analysis_spec([metric], interval="10s", min_requests=20)
    )
    runs, base = 300, 0.02
    result = figures("errors", planned_spec(spec, [metric]), Traffic(60.0, base, 3.0), runs, seed=3)
    rng = random.Random(11)
    counts = sequential_sim.Traffic(share=0.1, requests=600, p_candidate=3 * base, p_incumbent=base)
    independent = sum(
        sequential_sim.sequential_rollout(rng, counts, intervals=10) is not None for _ in range(runs)
    )
    assert result.false_rollback <= 0.05 + 4 * math.sqrt(0.05 * 0.95 / runs)
    assert result.caught >= independent / runs - 4 * math.sqrt(0.25 / runs), (
        result.caught,
        independent / runs,
    )


def rollouts_in_examples() -> list[Path]:
    found = []
    for path in sorted(EXAMPLES.rglob("*.yaml")):
        if any(
            isinstance(d, dict) and d.get("kind") == "ModelRollout"
            for d in yaml.safe_load_all(path.read_text())
        ):
            found.append(path)
    return found


def plan_json(capsys: pytest.CaptureFixture[str], path: Path, *options: str) -> tuple[int, dict[str, Any]]:
    code = main(
        [
            "plan",
            "-f",
            str(path),
            "--rps",
            "50",
            "--base-rate",
            "0.002",
            "--runs",
            "10",
            *options,
            "-o",
            "json",
        ]
    )
    return code, json.loads(capsys.readouterr().out)


def rollouts_without_analysis() -> list[Path]:
    return [path for path in rollouts_in_examples() if "analysis" not in read_manifest(path)["spec"]]


# The examples with an analysis are planned once each, at their own traffic, in test_examples_plan.py.
@pytest.mark.parametrize("path", rollouts_without_analysis(), ids=lambda p: str(p.relative_to(EXAMPLES)))
def test_plan_says_an_example_without_an_analysis_has_nothing_to_plan(
    capsys: pytest.CaptureFixture[str], path: Path
) -> None:
    assert main(["plan", "-f", str(path), "--rps", "50", "--base-rate", "0.002"]) == EXIT_NOTHING_TO_PLAN
    captured = capsys.readouterr()
    assert captured.out == "" and "spec.analysis" in captured.err


def test_the_table_fits_80_columns(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "plan",
            "-f",
            str(EXAMPLES / "demo" / "rollout-good.yaml"),
            "--rps",
            "50",
            "--base-rate",
            "0.002",
            "--runs",
            "5",
        ]
    )
    lines = capsys.readouterr().out.splitlines()
    assert code == EXIT_OK
    assert lines and max(len(line.rstrip()) for line in lines) <= 80


def test_the_same_seed_gives_the_same_figures(capsys: pytest.CaptureFixture[str]) -> None:
    path = EXAMPLES / "rollout-good.yaml"
    first, again = plan_json(capsys, path, "--seed", "5"), plan_json(capsys, path, "--seed", "5")
    assert first == again


def write_rollout(
    tmp_path: Path, *metrics: dict[str, Any], annotations: dict[str, str] | None = None
) -> Path:
    spec = make_spec(
        weight(10),
        weight(50),
        analysis=analysis_spec(
            [MetricSpec.model_validate(m) for m in metrics], interval="10s", min_requests=20
        ),
    )
    path = tmp_path / "rollout.yaml"
    metadata = {"name": "chat"} | ({"annotations": annotations} if annotations else {})
    body = {"apiVersion": "modelgate.io/v1alpha1", "kind": "ModelRollout", "metadata": metadata}
    path.write_text(
        yaml.safe_dump(body | {"spec": spec.model_dump(by_alias=True, exclude_none=True, mode="json")})
    )
    return path


def test_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    coin_toss = write_rollout(tmp_path, {"name": "errors", "preset": "errorRate", "max": 0.01})
    common = ["--rps", "20", "--base-rate", "0.005", "--runs", "40"]
    assert main(["plan", "-f", str(coin_toss), *common, "--fail-above", "0.2"]) == EXIT_COIN_TOSS
    assert main(["plan", "-f", str(coin_toss), *common, "--fail-above", "1"]) == EXIT_OK
    assert main(["plan", "-f", str(coin_toss), "--rps", "20", "--base-rate", "1.5"]) == EXIT_USAGE
    latency_only = write_rollout(tmp_path, {"name": "p99", "preset": "latencyP99", "max": 1.0})
    assert main(["plan", "-f", str(latency_only), *common]) == EXIT_NOTHING_TO_PLAN
    assert "latency quantile" in capsys.readouterr().out


def test_a_step_that_cannot_pass_counts_as_waiting_not_as_promoted() -> None:
    """Too little traffic for minRequests: every evaluation is Inconclusive, and the plan says the
    rollouts wait; it never takes silence for a pass."""
    metric = MetricSpec.model_validate({"name": "errors", "preset": "errorRate", "max": 0.05})
    spec = make_spec(weight(10), analysis=analysis_spec([metric], interval="30s", min_requests=1000))
    result: Figures = figures("errors", planned_spec(spec, [metric]), Traffic(1.0, 0.01, 2.0), 5, seed=1)
    assert (result.waiting, result.promoted, result.false_rollback) == (1.0, 0.0, 0.0)


def test_a_plan_cut_short_by_its_budget_is_the_first_runs_of_a_whole_one() -> None:
    """The budget counts the engine's ticks, not seconds: the runs it stops at, and so the figures,
    are the same on any machine, and each run is the one a longer plan would have simulated."""
    metric = MetricSpec.model_validate({"name": "errors", "preset": "errorRate", "max": 0.05})
    spec = planned_spec(make_spec(weight(10), weight(50), analysis=analysis_spec([metric])), [metric])
    traffic = Traffic(20.0, 0.01, 2.0)
    budgeted = figures("errors", spec, traffic, Runs(most=500, least=5, ticks=300), seed=2)
    assert 5 <= budgeted.runs < 500
    assert budgeted == figures("errors", spec, traffic, budgeted.runs, seed=2)
    assert figures("errors", spec, traffic, Runs(most=500, least=50, ticks=300), seed=2).runs == 50


def test_the_interval_of_a_share_is_wilsons() -> None:
    # None seen in n: the upper end is z^2 / (n + z^2); all seen, the mirror image.
    z2 = 1.959964**2
    assert wilson_interval(0, 60) == pytest.approx((0.0, z2 / (60 + z2)))
    assert wilson_interval(60, 60) == pytest.approx((60 / (60 + z2), 1.0))
    low, high = wilson_interval(5, 100)
    assert 0.02 < low < 0.05 < high < 0.12  # (2.2%, 11.2%)


def test_the_traffic_is_the_manifests_unless_the_flags_say_otherwise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    errors = {"name": "errors", "preset": "errorRate", "max": 0.05}
    annotated = write_rollout(
        tmp_path, errors, annotations={RPS_ANNOTATION: "30", BASE_RATE_ANNOTATION: "0.004"}
    )
    assert main(["plan", "-f", str(annotated), "--runs", "2", "-o", "json"]) == EXIT_OK
    traffic = json.loads(capsys.readouterr().out)["traffic"]
    assert (traffic["requests_per_second"], traffic["base_rate"]) == (30, 0.004)
    assert main(["plan", "-f", str(annotated), "--runs", "2", "--rps", "7", "-o", "json"]) == EXIT_OK
    assert json.loads(capsys.readouterr().out)["traffic"]["requests_per_second"] == 7


@pytest.mark.parametrize(
    ("annotations", "named"),
    [({}, RPS_ANNOTATION), ({RPS_ANNOTATION: "fast", BASE_RATE_ANNOTATION: "0.01"}, RPS_ANNOTATION)],
    ids=["unstated", "not a number"],
)
def test_traffic_that_is_unknown_or_no_number_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], annotations: dict[str, str], named: str
) -> None:
    path = write_rollout(
        tmp_path, {"name": "errors", "preset": "errorRate", "max": 0.05}, annotations=annotations
    )
    assert main(["plan", "-f", str(path)]) == EXIT_USAGE
    assert named in capsys.readouterr().err.replace("\n", "")


@pytest.mark.parametrize(
    ("sequential", "passes"), [({"marginIncrease": 0.001}, True), ({"margin": 2}, False), ({}, True)]
)
def test_plan_says_when_a_service_without_errors_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sequential: dict[str, float], passes: bool
) -> None:
    """The time is core/counted.py's zero_event_pass at the first step's candidate traffic, after the
    first evaluation's baseline; a ratio margin never passes on 0 events."""
    manifest = read_manifest(EXAMPLES / "rollout.yaml")
    manifest["spec"]["analysis"]["metrics"][0]["sequential"] = sequential
    path = tmp_path / "rollout.yaml"
    path.write_text(yaml.safe_dump(manifest))
    arguments = ["-f", str(path), "--rps", "100", "--base-rate", "0.01", "--runs", "5", "-o", "json"]
    assert main(["plan", *arguments]) == EXIT_OK
    (passing,) = json.loads(capsys.readouterr().out)["zeroErrorPass"]
    if not passes:
        assert passing["seconds"] is None and passing["candidate_requests"] is None
        return
    per_look = 100 * 0.10 * 30  # 10% of 100 requests/s, every 30 s
    needed = zero_event_pass(SequentialTest.model_validate(sequential), per_look)
    assert passing["candidate_requests"] == needed
    assert passing["seconds"] == (pytest.approx((needed / per_look + 1) * 30) if needed else 0.0)
