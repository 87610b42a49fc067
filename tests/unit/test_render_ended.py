"""An ended rollout's `modelgate status` reads the same whenever it is read: no "now", no time left."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from rich.console import Console

from modelgate.api import ModelRolloutStatus, Phase
from modelgate.cli.render.rollout import render_status

STARTED = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def shown(status: ModelRolloutStatus, now: datetime) -> str:
    body = {
        "metadata": {"namespace": "serving", "name": "chat"},
        "spec": {
            "incumbent": {"deployment": "chat-v1"},
            "candidate": {"deployment": "chat-v2"},
            "steps": [{"setWeight": 10}, {"pause": {"duration": "10m"}}, {"setWeight": 100}],
        },
        "status": status.to_patch(),
    }
    console = Console(width=80, record=True)
    console.print(render_status(body, now=now))
    return console.export_text()


@pytest.mark.parametrize(
    ("phase", "step"), [(Phase.ROLLED_BACK, 1), (Phase.FAILED, 1), (Phase.SUCCEEDED, 3)], ids=str
)
def test_an_ended_rollouts_view_does_not_depend_on_when_it_is_read(phase: Phase, step: int) -> None:
    status = ModelRolloutStatus(phase=phase, current_step_index=step, step_started_at=STARTED)
    soon, later = shown(status, STARTED + timedelta(minutes=2)), shown(status, STARTED + timedelta(days=3))
    assert soon == later
    assert "now" not in soon.lower().split() and "now:" not in soon
    assert f"{step}/3 completed" in soon


def test_a_running_rollouts_view_counts_the_time_left_to_now() -> None:
    status = ModelRolloutStatus(phase=Phase.PAUSED, current_step_index=1, step_started_at=STARTED)
    assert shown(status, STARTED + timedelta(minutes=2)) != shown(status, STARTED + timedelta(minutes=7))
