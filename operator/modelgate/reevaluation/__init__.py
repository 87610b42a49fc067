"""The ModelEvaluation's decisions, pure like core/: when a run is due, what a finished run's results
mean against the baseline, and every effect of a tick as a typed action; the reconciler
(evaluation_reconciler.py) applies them."""

from modelgate.reevaluation.decide import decide, decide_unusable
from modelgate.reevaluation.decision import (
    DeleteJobs,
    EvaluationDecision,
    ExportRegressed,
    Observations,
    PostEvent,
    StartRun,
)

__all__ = [
    "DeleteJobs",
    "EvaluationDecision",
    "ExportRegressed",
    "Observations",
    "PostEvent",
    "StartRun",
    "decide",
    "decide_unusable",
]
