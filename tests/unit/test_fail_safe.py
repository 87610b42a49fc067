"""A tick that raises (issue 34): a bug fails the rollout and returns the candidate's traffic on the
second failure in a row, in the decision (core/endings.py), in the reconciler against an
in-memory API, and in the loop's timing; an API server that cannot be reached fails nothing."""

from __future__ import annotations

import asyncio
import copy
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, cast

import pytest
from structlog.testing import capture_logs

from modelgate import loops
from modelgate.api import ModelRolloutStatus, Phase
from modelgate.core import ConditionType, Outcome, Reason
from modelgate.core.endings import TickError, decide_internal_error
from modelgate.core.model import RecordEnding
from modelgate.core.reasons import condition
from modelgate.fail_safe import FAIL_SAFE_AFTER, TickFailures, transient
from modelgate.kube import Conflict, Kube, KubeError
from modelgate.modelevaluation.loops import EvaluationTicker
from modelgate.reconciler import Reconciler, TickResult
from modelgate.rollout_loops import RolloutLoops, RolloutTicker
from testbed.traffic_driver import parse_backend_weights
from tests.unit.engine_support import (
    NOT_LIVE,
    T0,
    CommandAction,
    as_applied,
    command,
    event_reasons,
    live,
    make_spec,
    mirror,
    simulator_in,
    weight,
)
from tests.unit.test_reconciler_write_order import NOW, at_the_end_of_the_pause

BUG = TickError("OverflowError", "cost: the price times the hours is not finite")


def test_a_bug_fails_an_active_rollout_naming_the_error_and_returns_its_traffic() -> None:
    status = simulator_in(Phase.PAUSED).status
    failed = as_applied(decide_internal_error(BUG, status, 2, T0), live(20), router=NOT_LIVE)
    after = failed.status
    assert (after.phase, after.current_weight, failed.written, after.observed_generation) == (
        Phase.FAILED,
        0,
        0,
        2,
    )
    assert "OverflowError" in (after.message or "") and BUG.detail in (after.message or "")
    said = after.internal_error
    assert said is not None and (said.type, said.message, said.time) == ("OverflowError", BUG.detail, T0)
    completed = condition(after.conditions, ConditionType.COMPLETED)
    assert completed is not None and completed.reason == Reason.INTERNAL_ERROR
    assert failed.outcome is not None and failed.outcome.reason is Reason.INTERNAL_ERROR
    assert event_reasons(failed) == [Reason.INTERNAL_ERROR, Reason.WEIGHT_NOT_APPLIED]  # did not take
    # the write did not take: asked again, said once
    again = as_applied(decide_internal_error(BUG, after, 2, T0), live(20), router=NOT_LIVE)
    assert (again.written, again.events, again.outcome) == (0, (), None)
    later = decide_internal_error(BUG, after, 2, T0 + timedelta(minutes=1))
    assert later.status.internal_error == said  # since the first time
    returned = after.model_copy(update={"live_weight": 0})
    assert as_applied(decide_internal_error(BUG, returned, 2, T0)).written is None


def test_a_bug_ends_a_mirror_and_a_rollback_at_zero_but_leaves_a_succeeded_rollout_serving() -> None:
    mirroring = simulator_in(Phase.PROGRESSING, make_spec(mirror(20, "1h"), weight(100), with_analysis=False))
    mirroring.tick()
    assert mirroring.status.live_mirror_percent == 20
    ended = as_applied(decide_internal_error(BUG, mirroring.status, 1, T0), mirroring.route)
    assert (ended.written, ended.mirror_written, ended.status.current_mirror_percent) == (0, 0, 0)

    rolled_back = simulator_in(Phase.ROLLED_BACK)
    halfway = rolled_back.status.model_copy(update={"live_weight": 10, "current_weight": 10})
    assert as_applied(decide_internal_error(BUG, halfway, 1, T0), live(10)).written == 0

    succeeded = simulator_in(Phase.SUCCEEDED).status
    kept = as_applied(decide_internal_error(BUG, succeeded, 1, T0), live(100))
    assert (kept.status.phase, kept.status.current_weight, kept.written) == (Phase.SUCCEEDED, 100, None)


def test_a_retry_after_the_fail_safe_starts_the_rollout_again() -> None:
    sim = simulator_in(Phase.PAUSED)
    sim.status = decide_internal_error(BUG, sim.status, 1, T0).status
    sim.tick()  # the next tick that passes keeps it Failed at 0
    assert (sim.phase, sim.status.current_weight) == (Phase.FAILED, 0)
    assert sim.status.internal_error is not None
    sim.tick(command=command(CommandAction.RETRY, "r1"))
    assert sim.phase is Phase.PROGRESSING and sim.status.internal_error is None


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (KubeError(None, "cannot reach the Kubernetes API server"), True),
        (KubeError(503, "etcd leader changed"), True),
        (Conflict(409, "the object has been modified"), True),
        (KubeError(422, "status.cost.candidate.costPerMillionTokens: must be finite"), False),
        (OverflowError("cost"), False),
        (KeyError("weight"), False),
    ],
)
def test_only_an_api_server_that_may_answer_otherwise_is_transient(error: Exception, expected: bool) -> None:
    assert transient(error) is expected


def test_the_fail_safe_is_due_at_the_second_unexpected_failure_in_a_row_and_again_until_a_tick_passes() -> (
    None
):
    failures, key = TickFailures(), ("serving", "chat")
    outage = KubeError(None, "cannot reach the Kubernetes API server")
    assert [failures.fail_safe_due(key, outage) for _ in range(5)] == [False] * 5
    assert [failures.fail_safe_due(key, KeyError("x")) for _ in range(3)] == [False, True, True]
    failures.passed(key)
    assert not failures.fail_safe_due(key, KeyError("x"))  # a one-off after a passing tick: retried
    assert FAIL_SAFE_AFTER == 2


class RaisingObserver:
    def observe(self, *_: Any) -> Any:
        raise OverflowError("cost: the price times the hours is not finite")


def test_a_tick_that_keeps_raising_fails_the_rollout_and_writes_zero_on_its_retry() -> None:
    kube = at_the_end_of_the_pause()  # at 20%, Progressing
    reconciler = Reconciler(cast(Kube, kube), clock=lambda: NOW)
    reconciler.observer = RaisingObserver()  # type: ignore[assignment]
    with pytest.raises(OverflowError):
        reconciler.tick(copy.deepcopy(kube.rollout))
    assert kube.writes == []  # the first is retried: nothing decided yet
    result = reconciler.tick(copy.deepcopy(kube.rollout))
    assert kube.writes[0] == ("route", 0)
    assert parse_backend_weights(kube.route, 0) == {"chat-v1": 100, "chat-v2": 0}
    status = ModelRolloutStatus.model_validate(kube.rollout["status"])
    assert status.phase is Phase.FAILED and "OverflowError" in (status.message or "")
    assert result.decision is not None
    assert RecordEnding(Outcome(Phase.FAILED, Reason.INTERNAL_ERROR)) in result.decision.actions


class FailingTicks:
    """A reconciler whose ticks raise a new `error` `count` times, then pass; records when each ran."""

    def __init__(self, error: Callable[[], Exception], count: int) -> None:
        self.error, self.count = error, count
        self.times: list[float] = []
        self.passed = threading.Event()

    def tick_by_name(self, namespace: str, name: str, *, fresh: bool = False) -> TickResult:
        self.times.append(time.monotonic())
        if len(self.times) <= self.count:
            raise self.error()
        self.passed.set()
        return TickResult(None, timedelta(hours=1))

    def forget(self, namespace: str, name: str) -> None:
        pass


def retry_gaps(error: Callable[[], Exception], count: int, *, fail_safe: bool = True) -> list[float]:
    ticks = FailingTicks(error, count)

    async def run() -> None:
        rollout_loops = RolloutLoops(cast(Reconciler, ticks))
        rollout_loops.ticker.fail_safe = fail_safe
        rollout_loops.notice(None, {"metadata": {"namespace": "serving", "name": "chat"}, "spec": {}})
        await asyncio.to_thread(ticks.passed.wait, 30)
        await rollout_loops.stop()

    with capture_logs():  # not rendered: the gaps are the loop's
        asyncio.run(run())
    return [later - earlier for earlier, later in zip(ticks.times, ticks.times[1:], strict=False)]


def test_after_an_unexpected_error_the_loop_retries_within_the_short_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The backoff doubles from ERROR_BACKOFF; after a bug it stops at MAX_UNEXPECTED_BACKOFF, so a
    fail-safe that fails is tried again soon; after an outage it grows on (to MAX_ERROR_BACKOFF)."""
    monkeypatch.setattr(loops, "ERROR_BACKOFF", timedelta(seconds=0.1))
    monkeypatch.setattr(loops, "MAX_UNEXPECTED_BACKOFF", timedelta(seconds=0.2))
    bug = retry_gaps(lambda: OverflowError("bug"), 4)
    assert len(bug) == 4 and bug[0] < 0.2 and all(gap < 0.3 for gap in bug), bug
    outage = retry_gaps(lambda: KubeError(None, "cannot reach the Kubernetes API server"), 4)
    assert len(outage) == 4 and outage[3] > 0.7, outage
    # A kind with no fail-safe (ModelEvaluation) backs off from a bug as from an outage.
    assert not EvaluationTicker.fail_safe and RolloutTicker.fail_safe
    no_fail_safe = retry_gaps(lambda: OverflowError("bug"), 4, fail_safe=False)
    assert len(no_fail_safe) == 4 and no_fail_safe[3] > 0.7, no_fail_safe
