"""A ModelEvaluation's history as one JSON document (`modelgate evaluations NAME -o`).

A ModelEvaluation's history as one JSON document (`modelgate evaluations NAME -o json|s3://...`):
its runs as status keeps them (newest first), each check's scores per run oldest first, and the
baseline in use. Pure: the status in, the document out."""

from __future__ import annotations

import json
from typing import Any

from modelgate.api.evaluation_status import ModelEvaluationStatus

HISTORY_KIND = "ModelEvaluationHistory"


def evaluation_history(namespace: str, name: str, schedule: str, status: ModelEvaluationStatus) -> str:
    """The document, as JSON text."""
    scores: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for run in reversed(status.runs):  # oldest first, as a series is read
        for check in run.checks:
            for score in check.scores:
                series = scores.setdefault(check.name, {}).setdefault(score.name, [])
                series.append({"run": run.id, "value": score.value, "verdict": score.verdict.value})
    baseline = status.baseline
    document = {
        "kind": HISTORY_KIND,
        "namespace": namespace,
        "name": name,
        "schedule": schedule,
        "baseline": None if baseline is None else baseline.model_dump(by_alias=True, mode="json"),
        "scores": scores,
        "runs": [run.model_dump(by_alias=True, mode="json", exclude_none=True) for run in status.runs],
    }
    return json.dumps(document, indent=1)
