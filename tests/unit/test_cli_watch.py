"""When `modelgate status -w` stops and how it exits: the worst outcome among the rollouts watched, and
only once the operator has answered the spec as it is now."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from modelgate.cli.exit_codes import ExitCode
from modelgate.cli.main import build_parser
from modelgate.cli.render import views
from modelgate.cli.render.watch_exit import watch_outcome


def rollout(phase: str | None, *, generation: int = 2, observed: int | None = 2) -> dict[str, Any]:
    status = {} if phase is None else {"phase": phase, "observedGeneration": observed}
    return {"metadata": {"name": "chat", "generation": generation}, "status": status}


@pytest.mark.parametrize(
    ("phases", "expected"),
    [
        (["Succeeded"], ExitCode.OK),
        (["RolledBack"], ExitCode.ROLLED_BACK),
        (["Failed"], ExitCode.FAILED),
        (["Succeeded", "RolledBack"], ExitCode.ROLLED_BACK),
        (["RolledBack", "Failed", "Succeeded"], ExitCode.FAILED),
        (["Succeeded", "Progressing"], None),
        (["Paused"], None),
        ([None], None),
    ],
)
def test_the_worst_outcome_once_every_rollout_has_ended(
    phases: list[str | None], expected: ExitCode | None
) -> None:
    assert watch_outcome([rollout(phase) for phase in phases]) == expected


def test_an_end_reached_for_an_older_spec_is_not_the_end() -> None:
    """A candidate applied a moment ago: the status still shows the last attempt's RolledBack."""
    assert watch_outcome([rollout("RolledBack", generation=3, observed=2)]) is None
    assert watch_outcome([rollout("Succeeded", generation=3, observed=3)]) == ExitCode.OK


def test_a_watch_that_outlasts_its_timeout_exits_with_its_own_code(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []

    def still_progressing(*_: object) -> list[dict[str, Any]]:
        reads.append(1)
        return [rollout("Progressing")]

    monkeypatch.setattr(views, "connect", lambda _: (None, "serving"))
    monkeypatch.setattr(views, "_targets", still_progressing)
    monkeypatch.setattr(views, "_view", lambda *_: "")
    monkeypatch.setattr(views, "REFRESH_SECONDS", 0.01)
    args = views_args("--timeout", "50ms")
    assert views.show_status(args) == ExitCode.TIMED_OUT
    assert len(reads) > 1  # it watched before it gave up


def views_args(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(["status", "chat", "-w", *argv])


def stepping(phase: str, step: int, weight: int, analysed: str | None = None) -> dict[str, Any]:
    body = rollout(phase)
    body["spec"] = {"steps": [{"setWeight": 20}, {"setWeight": 60}]}
    body["status"] |= {"currentStepIndex": step, "currentWeight": weight}
    if analysed is not None:
        verdict = {"name": "errors", "verdict": "Pass", "time": analysed, "value": 0.01}
        body["status"] |= {"lastAnalysisAt": analysed, "analysis": [verdict]}
    return body


def test_with_no_terminal_the_watch_prints_a_line_per_change_as_it_happens(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Standard output is not a terminal here (as in CI): each read that changed what the rollout
    shows prints a line then, an unchanged one prints nothing, and the end prints the whole view."""
    reads = [
        [stepping("Progressing", 0, 20)],
        [stepping("Progressing", 0, 20)],  # nothing new
        [stepping("Progressing", 0, 20, analysed="2026-01-01T00:00:10Z")],
        [stepping("Progressing", 1, 60, analysed="2026-01-01T00:00:10Z")],
        [stepping("Succeeded", 2, 100, analysed="2026-01-01T00:00:20Z")],
    ]
    printed_by_read: list[int] = []

    def next_read(*_: object) -> list[dict[str, Any]]:
        printed_by_read.append(len(capsys.readouterr().out.splitlines()))
        return reads[len(printed_by_read) - 1]

    monkeypatch.setattr(views, "connect", lambda _: (None, "serving"))
    monkeypatch.setattr(views, "_targets", next_read)
    monkeypatch.setattr(views, "_view", lambda *_: "(the whole view)")
    monkeypatch.setattr(views, "REFRESH_SECONDS", 0.01)
    assert views.show_status(views_args()) == ExitCode.OK
    # Before each read, the lines printed since the read before it: none before the first.
    assert printed_by_read == [0, 1, 0, 1, 1]
    last_line, whole_view = capsys.readouterr().out.splitlines()
    assert "Succeeded" in last_line and whole_view == "(the whole view)"
