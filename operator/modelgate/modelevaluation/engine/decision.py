"""What a ModelEvaluation's tick observes, and the Decision it returns: the new status and every
effect, in the order the reconciler applies them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from modelgate.api.evaluation_status import BaselineStatus, ModelEvaluationStatus
from modelgate.core.gate_judgement import CheckObservation

# The annotation whose new value starts a run now (`modelgate evaluate-now`).
RUN_NOW_ANNOTATION = "modelgate.io/run-now"


class EvaluationCondition(StrEnum):
    READY = "Ready"
    REGRESSED = "Regressed"


class EvaluationReason(StrEnum):
    """The reasons of the ModelEvaluation's conditions and Events."""

    SCHEDULED = "Scheduled"
    SUSPENDED = "Suspended"
    INVALID_SPEC = "InvalidSpec"
    BASELINE_UNAVAILABLE = "BaselineUnavailable"
    RUN_STARTED = "RunStarted"
    RUN_PASSED = "RunPassed"
    RUN_FAILED = "RunFailed"
    REGRESSED = "Regressed"
    NOT_REGRESSED = "NotRegressed"
    NO_RUN_YET = "NoRunYet"


@dataclass(frozen=True)
class EvaluationObservations:
    generation: int
    created_at: datetime
    run_now: str | None  # the run-now annotation's value
    # What each check's Job of the running run shows, by check name.
    checks: Mapping[str, CheckObservation]
    # The baseline's scores as read (a rollout's gate status), why they cannot be read, or None when
    # the spec sets no promoted baseline.
    promoted: BaselineStatus | str | None = None


@dataclass(frozen=True)
class StartRun:
    """Create each check's Job: (check name, Job name)."""

    run_id: str
    jobs: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class DeleteJobs:
    names: tuple[str, ...]


@dataclass(frozen=True)
class PostEvent:
    warning: bool
    reason: EvaluationReason
    message: str


@dataclass(frozen=True)
class ExportRegressed:
    """modelgate_evaluation_regressed per check, from the newest judged run (empty: none yet)."""

    checks: tuple[tuple[str, bool], ...]


Action = StartRun | DeleteJobs | PostEvent | ExportRegressed


@dataclass(frozen=True)
class EvaluationDecision:
    status: ModelEvaluationStatus
    # Applied in order, after the status is written: a run is in status before its Jobs exist, so a
    # restarted operator finds it and creates what is missing rather than starting another.
    actions: tuple[Action, ...]
    wake_at: datetime | None
