"""Trace IDs of the double's requests: the W3C trace context a caller sends, or a new one; the exemplar
the request's series carry; and a record of the latest ones with their HTTP status, so that a test can
check that a trace ID the operator reports is one the double really served (with an error)."""

from __future__ import annotations

import re
import secrets
from collections import deque
from contextvars import ContextVar
from typing import Any

# The request being served, per asyncio task (aiohttp serves each request in its own): what the
# exporters attach as the exemplar of the series they count it in.
CURRENT_EXEMPLAR: ContextVar[dict[str, str] | None] = ContextVar("current_exemplar", default=None)
_TRACEPARENT = re.compile(r"^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$")
_KEPT = 10_000


def trace_id_of(traceparent: str | None) -> str:
    """The trace ID of a `traceparent` header (W3C Trace Context), or a new random one."""
    match = _TRACEPARENT.match((traceparent or "").strip().lower())
    if match is not None and match.group(1) != "0" * 32:
        return match.group(1)
    return secrets.token_hex(16)


class RequestTraces:
    """The latest requests' trace IDs and statuses, oldest first."""

    def __init__(self) -> None:
        self._served: deque[tuple[str, int]] = deque(maxlen=_KEPT)

    def record(self, trace_id: str, status: int) -> None:
        self._served.append((trace_id, status))

    @staticmethod
    def traceparent(trace_id: str) -> str:
        return f"00-{trace_id}-{secrets.token_hex(8)}-01"

    def as_json(self) -> list[dict[str, Any]]:
        return [{"traceId": trace_id, "status": status} for trace_id, status in self._served]
