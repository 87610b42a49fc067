"""`baseline.promoted`: the scores a ModelRollout's gate recorded for its candidate (status.gate),
by check and score name; a rollout that is missing or has no gate scores is a reason naming the
field, never an empty baseline."""

from __future__ import annotations

from typing import Any, cast

from modelgate.api.evaluation_status import BaselineStatus
from modelgate.kube import Kube, NotFound
from modelgate.kube.evaluation_jobs import EvaluationJobs
from modelgate.modelevaluation.reconciler import EvaluationReconciler

GATE = {
    "startedAt": "2026-12-01T10:00:00Z",
    "run": "1-20261201T100000",
    "decision": "Canary",
    "checks": [
        {
            "name": "quality",
            "job": "chat-quality-1",
            "state": "Measured",
            "verdict": "Pass",
            "scores": [
                {
                    "name": "math",
                    "candidate": 0.88,
                    "incumbent": 0.8,
                    "samples": 25,
                    "verdict": "Pass",
                    "message": "ok",
                },
                {"name": "recall", "candidate": 0.84, "samples": 25, "verdict": "Pass", "message": "ok"},
            ],
        }
    ],
}


class Rollouts:
    """The one call the baseline makes: get a ModelRollout."""

    def __init__(self, bodies: dict[str, dict[str, Any]]) -> None:
        self.bodies = bodies

    def get_custom(self, group: str, version: str, namespace: str, plural: str, name: str) -> dict[str, Any]:
        if name not in self.bodies:
            raise NotFound(404, "not found")
        return self.bodies[name]


def promoted(bodies: dict[str, dict[str, Any]], rollout: str = "chat") -> BaselineStatus | str:
    reconciler = EvaluationReconciler(cast(Kube, Rollouts(bodies)), cast(EvaluationJobs, None))
    return reconciler._promoted_scores("serving", rollout)


def test_the_gate_candidate_scores_are_the_baseline() -> None:
    baseline = promoted({"chat": {"status": {"phase": "Succeeded", "gate": GATE}}})
    assert isinstance(baseline, BaselineStatus) and baseline.source == "rollout/chat"
    assert (baseline.value("quality", "math"), baseline.value("quality", "recall")) == (0.88, 0.84)
    assert baseline.value("other", "math") is None


def test_a_missing_rollout_or_one_without_gate_scores_is_named() -> None:
    missing = promoted({}, "gone")
    assert missing == "spec.baseline.promoted.rollout: ModelRollout serving/gone not found"
    ungated = promoted({"chat": {"status": {"phase": "Succeeded"}}})
    assert (
        isinstance(ungated, str)
        and "spec.baseline.promoted.rollout" in ungated
        and "no gate scores" in ungated
    )
