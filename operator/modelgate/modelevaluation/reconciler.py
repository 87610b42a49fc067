"""One tick of a ModelEvaluation: observe (the evaluation, its running run's Jobs, the baseline's
rollout) -> engine.decide -> apply the decision's actions (status first, then Jobs, Events and
the regressed metric)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import structlog

from modelgate import API_GROUP, API_VERSION, EVALUATION_PLURAL, PLURAL
from modelgate.api import InvalidSpecError, parse_status
from modelgate.api.evaluation_spec import ModelEvaluationSpec, parse_evaluation_spec
from modelgate.api.evaluation_status import (
    BaselineScore,
    BaselineStatus,
    ModelEvaluationStatus,
    RunOutcome,
    parse_evaluation_status,
)
from modelgate.clock import Clock, utc_now
from modelgate.kube import Kube, NotFound, ObjectGone
from modelgate.kube.evaluation_jobs import EvaluationJobs
from modelgate.modelevaluation.engine import (
    DeleteJobs,
    EvaluationDecision,
    EvaluationObservations,
    ExportRegressed,
    PostEvent,
    StartRun,
    decide,
    decide_unusable,
)
from modelgate.modelevaluation.engine.decision import RUN_NOW_ANNOTATION
from modelgate.observability import export_regressed

log = structlog.get_logger("modelgate.evaluations")


class EvaluationGone(ObjectGone):
    """The ModelEvaluation no longer exists: its loop ends."""


class EvaluationReconciler:
    def __init__(self, kube: Kube, jobs: EvaluationJobs, clock: Clock = utc_now) -> None:
        self.kube = kube
        self.jobs = jobs
        self.clock = clock

    def tick(self, namespace: str, name: str) -> datetime | None:
        """Returns when the evaluation wants its next tick (None: only when something changes)."""
        structlog.contextvars.bind_contextvars(namespace=namespace, evaluation=name)
        try:
            return self._tick(namespace, name)
        finally:
            structlog.contextvars.unbind_contextvars("namespace", "evaluation")

    def _tick(self, namespace: str, name: str) -> datetime | None:
        try:
            body = self.kube.get_custom(API_GROUP, API_VERSION, namespace, EVALUATION_PLURAL, name)
        except NotFound:
            raise EvaluationGone(f"{namespace}/{name}") from None
        meta = body["metadata"]
        now = self.clock()
        before = _status(body)
        generation = int(meta.get("generation") or 0)
        try:
            spec = parse_evaluation_spec(body.get("spec") or {})
        except InvalidSpecError as error:
            decision = decide_unusable(before, "; ".join(error.problems), now, generation)
            self._apply(body, None, before, decision)
            return None
        seen = self._observe(body, spec, before)
        decision = decide(spec, before, seen, now, name=meta["name"], uid=meta["uid"])
        self._apply(body, spec, before, decision)
        return decision.wake_at

    def _observe(
        self, body: Mapping[str, Any], spec: ModelEvaluationSpec, status: ModelEvaluationStatus
    ) -> EvaluationObservations:
        meta = body["metadata"]
        namespace = meta["namespace"]
        running = next((run for run in status.runs if run.outcome is RunOutcome.RUNNING), None)
        checks = {} if running is None else self.jobs.observe(namespace, meta["name"], spec, running)
        promoted = None
        if spec.baseline is not None and spec.baseline.promoted is not None:
            promoted = self._promoted_scores(namespace, spec.baseline.promoted.rollout)
        return EvaluationObservations(
            generation=int(meta.get("generation") or 0),
            created_at=datetime.fromisoformat(meta["creationTimestamp"]),
            run_now=(meta.get("annotations") or {}).get(RUN_NOW_ANNOTATION),
            checks=checks,
            promoted=promoted,
        )

    def _promoted_scores(self, namespace: str, rollout: str) -> BaselineStatus | str:
        """The candidate's scores in the rollout's gate status, or why there are none."""
        field = f"spec.baseline.promoted.rollout: ModelRollout {namespace}/{rollout}"
        try:
            body = self.kube.get_custom(API_GROUP, API_VERSION, namespace, PLURAL, rollout)
        except NotFound:
            return f"{field} not found"
        try:
            gate = parse_status(body.get("status") or {}).gate
        except InvalidSpecError as error:
            return f"{field} has a status the operator cannot read: {error}"
        if gate is None or not any(check.scores for check in gate.checks):
            return f"{field} has no gate scores (status.gate) to compare with"
        scores = tuple(
            BaselineScore(check=check.name, name=score.name, value=score.candidate)
            for check in gate.checks
            for score in check.scores
        )
        return BaselineStatus(source=f"rollout/{rollout}", scores=scores)

    def _apply(
        self,
        body: Mapping[str, Any],
        spec: ModelEvaluationSpec | None,
        before: ModelEvaluationStatus,
        decision: EvaluationDecision,
    ) -> None:
        meta = body["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        if decision.status != before:
            self.kube.patch_evaluation_status(
                namespace, name, decision.status.model_dump(by_alias=True, mode="json")
            )
        for action in decision.actions:
            match action:
                case StartRun(run_id=run_id, jobs=jobs):
                    assert spec is not None
                    self.jobs.start(body, spec, run_id, dict(jobs))
                case DeleteJobs(names=names):
                    self.jobs.delete(namespace, names)
                case PostEvent(warning=warning, reason=reason, message=message):
                    log.info(
                        "evaluation event",
                        namespace=namespace,
                        evaluation=name,
                        reason=reason,
                        message=message,
                    )
                    self.kube.create_event(
                        body, "Warning" if warning else "Normal", reason, message, action="Evaluate"
                    )
                case ExportRegressed(checks=checks):
                    export_regressed(namespace, name, checks)


def _status(body: Mapping[str, Any]) -> ModelEvaluationStatus:
    """The stored status; one the operator cannot read (written by a future version) starts afresh."""
    try:
        return parse_evaluation_status(body.get("status") or {})
    except InvalidSpecError as error:
        log.warning("unreadable status; starting afresh", error=str(error))
        return ModelEvaluationStatus()
