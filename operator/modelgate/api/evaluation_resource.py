"""The ModelEvaluation resource as kubectl shows it (api/resource.py is the ModelRollout's)."""

from modelgate.api.resource import PrinterColumn

DESCRIPTION = (
    "ModelEvaluation re-evaluates the model in service on a schedule with the evaluation gate's checks, "
    "and flags a run whose scores fall below the policy against a baseline (the Regressed condition)."
)
SHORT_NAMES = ("mev",)
CATEGORIES = ("modelgate",)
PRINTER_COLUMNS = (
    PrinterColumn("Schedule", "string", ".spec.schedule", "When runs start (cron, UTC)."),
    PrinterColumn("Last Run", "date", ".status.lastRunTime", "When the newest run started."),
    PrinterColumn(
        "Last Outcome",
        "string",
        ".status.lastOutcome",
        "The newest finished run: Passed, Regressed or Failed.",
    ),
    PrinterColumn(
        "Age", "date", ".metadata.creationTimestamp", "Time since the ModelEvaluation was created."
    ),
)
