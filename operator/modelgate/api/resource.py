"""The ModelRollout resource as kubectl shows it: its description, short names, categories and the
columns of `kubectl get`. Group, version, kind and plural are the operator's (modelgate/__init__.py).

Declared here rather than in the CRD generator because, like the fields, they are part of the API
users see, and the columns name fields of these models.
"""

from dataclasses import dataclass
from typing import Literal

DESCRIPTION = (
    "ModelRollout shifts traffic from an incumbent model Deployment to a candidate Deployment in "
    "steps, and rolls back to the incumbent when the candidate's metrics breach their thresholds."
)
SHORT_NAMES = ("mro",)
CATEGORIES = ("modelgate",)


@dataclass(frozen=True)
class PrinterColumn:
    name: str
    type: Literal["string", "integer", "number", "boolean", "date"]
    json_path: str
    description: str


PRINTER_COLUMNS = (
    PrinterColumn(
        "Phase",
        "string",
        ".status.phase",
        "Where the rollout is (Pending, Progressing, Paused, Succeeded, RolledBack, Failed).",
    ),
    PrinterColumn(
        "Weight", "integer", ".status.currentWeight", "Share of traffic, in percent, routed to the candidate."
    ),
    PrinterColumn("Step", "integer", ".status.currentStepIndex", "Index of the step being executed."),
    PrinterColumn(
        "Incumbent",
        "string",
        ".spec.incumbent.deployment",
        "The Deployment serving today (blank for other kinds).",
    ),
    # The status's record: a side of any kind, and a one-edit rollout's generated candidate, by name.
    PrinterColumn("Candidate", "string", ".status.rolloutCandidate", "The candidate being rolled out."),
    PrinterColumn("Age", "date", ".metadata.creationTimestamp", "Time since the ModelRollout was created."),
    PrinterColumn(
        "Message", "string", ".status.shortMessage", "What the operator is doing or waiting for, in short."
    ),
)
