"""A ModelEvaluation's score trend in a terminal, at 80 columns; pure.

A ModelEvaluation's score trend in a terminal, pure: one row per check and score, the baseline,
then the last runs oldest to newest, at most as many as fit 80 columns."""

from __future__ import annotations

from modelgate.api.evaluation_status import EvaluationRun, ModelEvaluationStatus, RunOutcome
from modelgate.api.statusmodel import Verdict

WIDTH = 80
LABEL = 24  # check/score
CELL = 7  # one run's value, e.g. " 0.800*"
MARKS = {Verdict.FAIL: "*", Verdict.INCONCLUSIVE: "?"}
OUTCOMES = {
    RunOutcome.RUNNING: "run..",
    RunOutcome.PASSED: "pass",
    RunOutcome.REGRESSED: "REGR",
    RunOutcome.FAILED: "fail",
}
LEGEND = "* below the policy against the baseline, ? too few samples, - not measured"


def _cell(text: str) -> str:
    return text.rjust(CELL)[:CELL] if len(text) <= CELL else text[: CELL - 1] + "…"


def _value(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _rows(runs: list[EvaluationRun]) -> list[tuple[str, str]]:
    """(check, score) in the order first measured."""
    seen: list[tuple[str, str]] = []
    for run in runs:
        for check in run.checks:
            for score in check.scores:
                if (check.name, score.name) not in seen:
                    seen.append((check.name, score.name))
    return seen


def _score_cell(run: EvaluationRun, check_name: str, score_name: str) -> str:
    check = next((c for c in run.checks if c.name == check_name), None)
    score = None if check is None else next((s for s in check.scores if s.name == score_name), None)
    if score is None:
        return _cell("-")
    return _cell(_value(score.value) + MARKS.get(score.verdict, ""))


def render_trend(namespace: str, name: str, schedule: str, status: ModelEvaluationStatus) -> list[str]:
    fits = (WIDTH - LABEL - CELL) // CELL
    runs = list(reversed(status.runs[:fits]))  # oldest first
    last = status.runs[0] if status.runs else None
    head = f"{namespace}/{name}  schedule {schedule}"
    if last is not None:
        head += f"  last {last.outcome}" + (f" ({last.reason})" if last.reason else "")
    lines = [head[:WIDTH]]
    if not runs:
        return [*lines, "  no runs yet"]
    label = "started (UTC)".ljust(LABEL) + _cell("base")
    lines.append(label + "".join(_cell(run.started_at.strftime("%H:%M")) for run in runs))
    lines.append("outcome".ljust(LABEL) + _cell("") + "".join(_cell(OUTCOMES[run.outcome]) for run in runs))
    baseline = status.baseline
    for check, score in _rows(runs):
        text = f"{check}/{score}"
        text = text if len(text) <= LABEL - 1 else text[: LABEL - 2] + "…"
        base = _cell(_value(None if baseline is None else baseline.value(check, score)))
        lines.append(text.ljust(LABEL) + base + "".join(_score_cell(run, check, score) for run in runs))
    return lines
