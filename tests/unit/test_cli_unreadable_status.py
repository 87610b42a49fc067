"""`modelgate status` on a rollout whose stored status the models cannot read (the API server's schema
is looser): an error naming the field and exit 1, not a traceback."""

from __future__ import annotations

from typing import Any

import pytest

from modelgate.cli import views
from modelgate.cli.main import main

UNREADABLE = {
    "metadata": {"namespace": "serving", "name": "chat"},
    "spec": {
        "incumbent": {"deployment": "chat-v1"},
        "candidate": {"deployment": "chat-v2"},
        "steps": [{"setWeight": 10}],
    },
    # The CRD takes any date-time; no duration can be added to one in the year 9999.
    "status": {"phase": "Progressing", "stepStartedAt": "9999-12-31T23:59:59Z"},
}


def test_status_of_an_unreadable_rollout_names_the_field(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(views, "connect", lambda args: (None, "serving"))
    monkeypatch.setattr(views, "read_rollout", lambda kube, namespace, name: dict[str, Any](UNREADABLE))
    assert main(["status", "chat"]) == 1
    error = capsys.readouterr().err
    assert "status.stepStartedAt" in error
    assert "Traceback" not in error
