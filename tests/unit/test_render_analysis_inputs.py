"""`modelgate status` shows, from status data, which queries do not answer and which series nobody
exports (and who would)."""

from __future__ import annotations

from datetime import UTC, datetime

from modelgate.api import MetricAnalysis, ModelRolloutStatus, Verdict
from modelgate.api.analysis_check import AnalysisCheck, UnansweredQuery
from modelgate.api.series import COMPONENT_NAMES, MissingSeries, SeriesComponent
from tests.unit.test_render_judgement import shown

AT = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
METRICS = [{"name": "refusals", "preset": "refusalRate", "max": 0.05}]


def test_the_queries_that_do_not_answer_are_shown_with_the_address() -> None:
    check = AnalysisCheck(
        analysis="d",
        at=AT,
        address="http://127.0.0.1:9",
        unanswered=(UnansweredQuery(metric="refusals", error="connection refused"),),
    )
    text = shown(METRICS, ModelRolloutStatus(analysis_check=check))
    assert "http://127.0.0.1:9" in text
    assert "refusals: connection refused" in text


def test_a_missing_series_is_shown_with_its_exporter() -> None:
    missing = MissingSeries(
        series="llm_requests_total", provided_by=SeriesComponent.REFUSAL_SIDECAR, sides=("candidate",)
    )
    record = MetricAnalysis(
        name="refusals", verdict=Verdict.INCONCLUSIVE, time=AT, message="no data", missing_series=(missing,)
    )
    text = " ".join(shown(METRICS, (record,)).split())
    assert "llm_requests_total" in text
    assert " ".join(COMPONENT_NAMES[SeriesComponent.REFUSAL_SIDECAR].split()) in text
