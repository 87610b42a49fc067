"""What an exception out of a tick means for its rollout, and when it calls for the fail-safe.

What an exception out of a tick means for its rollout, and the fail-safe it may call for (issue
34: a tick that kept raising left the candidate on its weight, unjudged, for as long as it raised).

- Transient: a KubeError, the API server not answering or refusing the request for now (the object
  went or changed under it, too many requests, a server error, a permission). Nothing is decided:
  the operator most likely can write nothing meanwhile. The loop retries with a backoff up to 30 s.
- Unexpected: any other exception, a request the API server refuses as such (400, 422) included: a
  bug. The rule: the first is retried after ERROR_BACKOFF (a second); the second in a row (a
  KubeError between the two does not break the row) runs the fail-safe (core/endings.py:
  Failed, the candidate's weight 0). A tick is idempotent and observes everything afresh, so a
  one-off (a race between two reads) passes on the retry and never fails the rollout, while a bug
  that repeats has the traffic back on the incumbent about a second after the first failure, well
  within one analysis interval. Once it has run, every further unexpected failure runs it again at
  once, until a tick passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from modelgate.api import InvalidSpecError, ModelRolloutStatus, parse_spec, parse_status
from modelgate.core import Decision
from modelgate.core.endings import TickError, decide_internal_error
from modelgate.kube import KubeError

# Statuses of a request refused as such: the same request gets the same answer.
REFUSED_AS_SUCH = frozenset({400, 422})
FAIL_SAFE_AFTER = 2  # unexpected failures in a row


def transient(error: BaseException) -> bool:
    return isinstance(error, KubeError) and error.status not in REFUSED_AS_SUCH


class TickFailures:
    """Each rollout's unexpected failures in a row; touched only by its rollout's tick."""

    def __init__(self) -> None:
        self._in_a_row: dict[tuple[str, str], int] = {}

    def fail_safe_due(self, key: tuple[str, str], error: BaseException) -> bool:
        """Counts the tick's `error`; whether the fail-safe must run now."""
        if transient(error):
            return False
        count = self._in_a_row[key] = self._in_a_row.get(key, 0) + 1
        return count >= FAIL_SAFE_AFTER

    def passed(self, key: tuple[str, str]) -> None:
        self._in_a_row.pop(key, None)


def fail_safe_decision(
    body: Mapping[str, Any], error: Exception, now: datetime
) -> tuple[ModelRolloutStatus, Decision]:
    """The stored status, and the fail-safe's decision from it alone: nothing the failed tick
    observed or held in memory is trusted."""
    try:
        stored = parse_status(body.get("status") or {})
    except InvalidSpecError:
        stored = forgotten_status(body)
    generation = int(body["metadata"].get("generation", 0))
    problem = TickError(type(error).__name__, str(error))
    return stored, decide_internal_error(problem, stored, generation, now)


def forgotten_status(body: Mapping[str, Any]) -> ModelRolloutStatus:
    """What stands in for a status that cannot be read (it is no longer the operator's memory): empty
    but for the candidate it belongs to, so that the Failed it gets holds, the route left as it is,
    until the spec changes, instead of starting over from step 0 at the next tick."""
    try:
        candidate: str | None = parse_spec(body.get("spec") or {}).candidate.identity
    except ValueError:
        candidate = None
    return ModelRolloutStatus(rollout_candidate=candidate)
