"""`modelgate status -w` with no terminal: a line for a rollout each time what it shows changes.

`modelgate status -w` with no terminal (a CI log, a file): a line for a rollout each time what it
shows changes (phase, step, weight, message, an analysis run), as it happens. A live view rewrites
the screen; in a file it would print nothing until the end, and a CI system may kill a job that is
silent for the hours a rollout takes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from modelgate.api import ModelRolloutStatus, parse_status
from modelgate.cli.render.analysis import number_text


def watch_line(body: dict[str, Any]) -> str:
    """What the rollout shows now, in one line: the same line until something changes."""
    meta = body["metadata"]
    status = parse_status(body.get("status") or {})
    parts = [
        f"{meta.get('namespace', '')}/{meta['name']}",
        status.phase.value if status.phase is not None else "(not started)",
        _step(status, len((body.get("spec") or {}).get("steps") or ())),
        f"weight {status.current_weight}%",
    ]
    if status.last_analysis_at is not None:
        verdicts = ", ".join(f"{m.name} {m.verdict} ({number_text(m.value)})" for m in status.analysis)
        parts.append(f"analysed at {status.last_analysis_at:%H:%M:%S}: {verdicts}")
    if status.message:
        parts.append(status.message)
    return " | ".join(parts)


def _step(status: ModelRolloutStatus, steps: int) -> str:
    return f"step {min(status.current_step_index + 1, steps)}/{steps}"


@dataclass
class WatchLines:
    """The lines last printed, by rollout: `changed` gives only the rollouts' new lines."""

    shown: dict[tuple[str, str], str] = field(default_factory=dict)

    def changed(self, rollouts: list[dict[str, Any]]) -> list[str]:
        lines = []
        for body in rollouts:
            key = (body["metadata"].get("namespace", ""), body["metadata"]["name"])
            line = watch_line(body)
            if self.shown.get(key) != line:
                self.shown[key] = line
                lines.append(line)
        return lines
