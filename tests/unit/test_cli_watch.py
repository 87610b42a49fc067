"""When `modelgate status -w` stops and how it exits: the worst outcome among the rollouts watched, and
only once the operator has answered the spec as it is now."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from modelgate.cli import views
from modelgate.cli.exit_codes import ExitCode
from modelgate.cli.main import build_parser
from modelgate.cli.watch_exit import watch_outcome


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
