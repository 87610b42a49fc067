"""`modelgate status` during a mirror step: the step by its kind, and the share copied to the candidate."""

from __future__ import annotations

from rich.console import Console

from modelgate.api import ModelRolloutStatus, Phase
from modelgate.cli.render.rollout import render_status


def shown(status: ModelRolloutStatus) -> str:
    body = {
        "metadata": {"namespace": "serving", "name": "chat"},
        "spec": {
            "incumbent": {"deployment": "chat-v1"},
            "candidate": {"deployment": "chat-v2"},
            "steps": [{"mirror": {"percent": 20, "duration": "10m"}}, {"setWeight": 10}],
        },
        "status": status.to_patch(),
    }
    console = Console(width=200, record=True)
    console.print(render_status(body))
    return console.export_text()


def test_a_mirror_step_shows_its_share_asked_and_live() -> None:
    text = shown(
        ModelRolloutStatus(phase=Phase.PROGRESSING, current_mirror_percent=20, live_mirror_percent=0)
    )
    assert "now: mirror 20% for 10m" in text
    assert "20% of requests copied to the candidate (live: 0%)" in text


def test_no_mirror_row_without_a_mirror() -> None:
    text = shown(ModelRolloutStatus(phase=Phase.PROGRESSING, current_step_index=1, current_weight=10))
    assert "copied to the candidate" not in text
