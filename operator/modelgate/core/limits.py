"""Lengths the status schema allows (api/status.py, the CRD), so that a long error text, query or
message from outside is shortened instead of making a status the API server would refuse."""

from __future__ import annotations

ANALYSIS_MESSAGE = 1024  # MetricAnalysis.message, RollbackReason.message
QUERY = 4096  # MetricAnalysis.query, RollbackReason.query
STATUS_MESSAGE = 4096  # ModelRolloutStatus.message
CONDITION_MESSAGE = 32768  # Condition.message


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
