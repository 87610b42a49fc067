"""Missing data says what is missing: a preset with no data asks which of its series Prometheus has
none of, and the Inconclusive verdict names each and what exports it; an Inconclusive step pauses
at a default deadline that a spec may change or turn off."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from modelgate.api import MetricSpec, Phase, ProgressDeadlines, Verdict
from modelgate.api.series import MissingSeries, SeriesComponent
from modelgate.core import AnalysisRun, ConditionType, QueryResult, Reason
from modelgate.core.reasons import condition
from modelgate.metrics.promql_plan import analysis_plan
from modelgate.metrics.provider import run_plan
from tests.unit.engine_support import (
    INTERVAL,
    Outcome,
    Simulator,
    analysis_spec,
    make_spec,
    weight,
)

REFUSALS = MetricSpec(name="refusals", preset="refusalRate", max=0.05)
NO_SIDECAR = tuple(
    MissingSeries(series=name, provided_by=SeriesComponent.REFUSAL_SIDECAR, sides=("candidate", "incumbent"))
    for name in ("llm_requests_total", "llm_refusals_total")
)


def answers(promql: str) -> QueryResult:
    """A Prometheus with the vLLM server's series and no refusal sidecar's."""
    if "llm_requests_total" in promql or "llm_refusals_total" in promql:
        return QueryResult()
    return QueryResult(value=100.0, sample_count=1)


def test_a_refusal_rate_without_the_sidecar_finds_both_its_series_missing() -> None:
    spec = make_spec(weight(20), analysis=analysis_spec([REFUSALS]))
    run = run_plan(analysis_plan(spec, "serving"), datetime.now(UTC), answers)
    assert run.metrics["refusals"].missing == NO_SIDECAR


def test_a_preset_with_data_asks_after_no_series() -> None:
    spec = make_spec(weight(20), analysis=analysis_spec([REFUSALS]))
    asked: list[str] = []

    def everything(promql: str) -> QueryResult:
        asked.append(promql)
        return QueryResult(value=0.01, sample_count=1)

    run = run_plan(analysis_plan(spec, "serving"), datetime.now(UTC), everything)
    assert run.metrics["refusals"].missing == ()
    assert not any(q.startswith("count(") for q in asked)


def started_without_sidecar(**deadlines: dict) -> Simulator:
    spec = make_spec(weight(20), weight(100), analysis=analysis_spec([REFUSALS]))
    if deadlines:
        spec = spec.model_copy(update={"progress_deadlines": ProgressDeadlines.model_validate(deadlines)})
    sim = Simulator(spec)
    sim.start()
    return sim


def no_sidecar_run(sim: Simulator) -> AnalysisRun:
    """Enough requests, and no refusal series on either side."""
    run = sim.run(Outcome.EMPTY)
    measured = replace(run.metrics["refusals"], missing=NO_SIDECAR)
    return replace(run, metrics={"refusals": measured})


def test_the_inconclusive_verdict_names_the_missing_series_and_their_exporter() -> None:
    sim = started_without_sidecar()
    sim.tick(analysis=no_sidecar_run(sim), after=INTERVAL)
    (record,) = sim.status.analysis
    assert record.verdict is Verdict.INCONCLUSIVE
    assert record.missing_series == NO_SIDECAR
    assert "llm_requests_total" in (record.message or "") and "refusal sidecar" in (record.message or "")


def run_inconclusive_for(sim: Simulator, span: timedelta) -> None:
    end = sim.now + span
    while sim.now < end:
        sim.tick(analysis=no_sidecar_run(sim), after=INTERVAL)


def test_an_inconclusive_step_pauses_at_the_default_deadline() -> None:
    sim = started_without_sidecar()
    run_inconclusive_for(sim, timedelta(minutes=9))
    assert sim.phase is Phase.PROGRESSING
    run_inconclusive_for(sim, timedelta(minutes=2))
    assert (sim.phase, sim.status.current_weight) == (Phase.PAUSED, 20)
    health = condition(sim.status.conditions, ConditionType.ANALYSIS_HEALTHY)
    assert health is not None and health.reason == Reason.PROGRESS_DEADLINE_EXCEEDED
    assert "llm_requests_total" in (sim.status.message or "")


def test_a_spec_may_shorten_the_inconclusive_deadline_or_turn_it_off() -> None:
    shorter = started_without_sidecar(inconclusive={"after": "1m", "action": "pause"})
    run_inconclusive_for(shorter, timedelta(minutes=2))
    assert shorter.phase is Phase.PAUSED
    off = started_without_sidecar(inconclusive={"after": "1m", "action": "wait"})
    run_inconclusive_for(off, timedelta(minutes=30))
    assert (off.phase, off.status.current_weight) == (Phase.PROGRESSING, 20)
