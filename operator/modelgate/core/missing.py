"""An Inconclusive metric whose data is missing because a series it reads does not exist (nobody
exports it) names the series and the component that exports it, as data and in its message: no
amount of waiting brings such data."""

from __future__ import annotations

from modelgate.api import MetricAnalysis, Verdict
from modelgate.core import limits
from modelgate.core.results import MetricQuery


def name_missing(record: MetricAnalysis, measured: MetricQuery) -> MetricAnalysis:
    if record.verdict is not Verdict.INCONCLUSIVE or not measured.missing:
        return record
    named = "; ".join(missing.describe() for missing in measured.missing)
    message = f"{record.message or 'no data'}; no such series: {named}"
    return record.model_copy(
        update={"missing_series": measured.missing, "message": limits.clip(message, limits.ANALYSIS_MESSAGE)}
    )
