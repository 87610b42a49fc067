"""Lengths the status schema allows (api/status.py, the CRD), so that a long error text, query or
message from outside is shortened instead of making a status the API server would refuse."""

from __future__ import annotations

from modelgate.api.bounds import EXACT_INT_MAX

ANALYSIS_MESSAGE = 1024  # MetricAnalysis.message, RollbackReason.message, InternalError.message
ERROR_TYPE = 253  # InternalError.type
QUERY = 4096  # MetricAnalysis.query, RollbackReason.query
STATUS_MESSAGE = 4096  # ModelRolloutStatus.message
CONDITION_MESSAGE = 32768  # Condition.message


def clip(text: str, limit: int, *, utf8: bool = False) -> str:
    """`text` cut to `limit` characters (the CRD's maxLength), or with `utf8` to `limit` UTF-8 bytes
    (what Events' validation counts), ending in "..." when cut and never mid-character."""
    size = len(text.encode()) if utf8 else len(text)
    if size <= limit:
        return text
    if not utf8:
        return text[: limit - 3] + "..."
    return text.encode()[: limit - 3].decode(errors="ignore") + "..."


def one_more(count: int) -> int:
    """A count kept in status, one up; it stays at the schema's largest integer, which a status
    written by hand may hold."""
    return min(count + 1, EXACT_INT_MAX)
