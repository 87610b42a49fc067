"""The ModelEvaluation's decisions, pure like core/: when a run is due, what a finished run's results
mean against the baseline, and every effect of a tick as a typed action; the reconciler
(modelevaluation/reconciler.py) applies them."""

from modelgate.modelevaluation.engine.decide import decide, decide_unusable
from modelgate.modelevaluation.engine.decision import (
    DeleteJobs,
    EvaluationDecision,
    EvaluationObservations,
    ExportRegressed,
    PostEvent,
    StartRun,
)

__all__ = [
    "DeleteJobs",
    "EvaluationDecision",
    "EvaluationObservations",
    "ExportRegressed",
    "PostEvent",
    "StartRun",
    "decide",
    "decide_unusable",
]
