"""The operator's warning that a rule is a coin toss at the traffic it measured: the chance is an
exact binomial sum (checked against the issue's figures), cheap enough for every evaluation, and the
engine puts one Warning Event per metric and step in its Decision, with the warning in status."""

from __future__ import annotations

import math
from datetime import timedelta

import pytest
from rich.console import Console

from modelgate.api import MetricSpec
from modelgate.cli.render.rollout import render_status
from modelgate.core import QueryResult, Reason
from modelgate.core.results import evaluation_chance
from tests.unit.engine_support import Simulator, analysis_spec, make_spec, timed_pause, weight

COIN_TOSS = MetricSpec.model_validate(
    {"name": "errors", "preset": "errorRate", "compare": {"maxIncrease": 0.02}}
)
SOUND = MetricSpec.model_validate({"name": "errors", "preset": "errorRate", "sequential": {"alpha": 0.05}})
# The coin toss's rule judged on anytime-valid bounds: its chance is its alpha, at any window size.
WITH_CONFIDENCE = MetricSpec.model_validate(
    {"name": "errors", "preset": "errorRate", "compare": {"maxIncrease": 0.02, "confidence": {"alpha": 0.05}}}
)


def test_the_issues_figures() -> None:
    # 40 candidate requests at a 1% base rate under maxIncrease 0.02, the incumbent's rate known
    # from many requests: two errors break it, about 6% of the time per evaluation.
    two_or_more = 1 - 0.99**40 - 40 * 0.01 * 0.99**39
    assert math.isclose(evaluation_chance(COIN_TOSS, 20, 0.01, 40, 1_000_000), two_or_more, abs_tol=0.003)
    # A 0.2% candidate under max 0.02, judged on 23 requests: one error is 4.4%, a Fail.
    fixed = MetricSpec.model_validate({"name": "errors", "preset": "errorRate", "max": 0.02})
    assert math.isclose(evaluation_chance(fixed, 20, 0.002, 23, None) or 0, 1 - 0.998**23, rel_tol=1e-9)
    assert evaluation_chance(fixed, 20, 0.002, 19, None) == 0.0  # below minRequests: Inconclusive


def rollout_at_step_with_pause(metric: MetricSpec) -> Simulator:
    """At the 10-minute pause after a 10% weight, judged every minute on one-minute windows."""
    spec = make_spec(
        weight(10), timed_pause("10m"), analysis=analysis_spec([metric], interval="60s", min_requests=20)
    )
    rollout = Simulator(spec)
    rollout.tick()  # Pending -> step 0, weight 10
    return rollout


def evaluation(rollout: Simulator) -> Simulator:
    """One analysis a minute on: 40 candidate requests without an error, the incumbent at 1%."""
    rollout.advance(timedelta(seconds=60))
    run = rollout.run(
        results={"errors": QueryResult(0.0, sample_count=1)},
        requests=QueryResult(40.0, sample_count=1),
        incumbent={"errors": QueryResult(0.01, sample_count=1)},
        incumbent_requests=QueryResult(360.0, sample_count=1),
    )
    rollout.tick(analysis=run)
    return rollout


def test_a_coin_toss_rule_is_warned_of_once_per_step() -> None:
    rollout = evaluation(rollout_at_step_with_pause(COIN_TOSS))  # completes step 0 (one look: ~9%)
    assert rollout.status.current_step_index == 1 and rollout.status.false_rollback_warnings == ()
    evaluation(rollout)  # in the pause: ten one-minute looks
    warnings = [e for d in rollout.ticks for e in d.events if e.reason is Reason.FALSE_ROLLBACK_LIKELY]
    recorded = rollout.status.false_rollback_warnings
    assert [(w.metric, w.step) for w in recorded] == [("errors", 1)]
    assert recorded[0].chance > 0.2 and recorded[0].candidate_requests == 40
    assert len(warnings) == 1 and warnings[0].type == "Warning"
    evaluation(evaluation(rollout))  # later evaluations in the same step say nothing more
    again = [e for d in rollout.ticks for e in d.events if e.reason is Reason.FALSE_ROLLBACK_LIKELY]
    assert len(again) == 1
    shown = Console(width=200, record=True)
    body = {
        "metadata": {"namespace": "serving", "name": "chat"},
        "spec": rollout.spec.model_dump(by_alias=True, exclude_none=True),
        "status": rollout.status.to_patch(),
    }
    shown.print(render_status(body))
    assert "Warning: errors in step 1" in shown.export_text()


@pytest.mark.parametrize("sound", [SOUND, WITH_CONFIDENCE], ids=["sequential", "compare-confidence"])
def test_a_sound_rule_is_not_warned_of(sound: MetricSpec) -> None:
    assert evaluation_chance(sound, 20, 0.01, 40, 1_000_000) == 0.0
    rollout = evaluation(evaluation(evaluation(rollout_at_step_with_pause(sound))))
    assert rollout.status.false_rollback_warnings == ()
    assert not any(e.reason is Reason.FALSE_ROLLBACK_LIKELY for d in rollout.ticks for e in d.events)
