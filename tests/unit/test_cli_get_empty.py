"""`modelgate get` that lists nothing says so in one sentence naming where it looked (on stderr, as
kubectl does: a script reading stdout gets nothing); with rollouts, it lists them on stdout."""

from __future__ import annotations

from typing import Any

import pytest

from modelgate.cli.main import main
from modelgate.cli.render import views

ROLLOUT = {
    "metadata": {"namespace": "serving", "name": "chat", "creationTimestamp": "2026-01-05T09:00:00Z"},
    "spec": {"incumbent": {"deployment": "chat-v1"}, "candidate": {"deployment": "chat-v2"}, "steps": []},
    "status": {"phase": "Progressing", "message": "step 0: waiting"},
}


@pytest.fixture
def listed(monkeypatch: pytest.MonkeyPatch) -> dict[str | None, list[dict[str, Any]]]:
    """The rollouts each namespace holds (None: every namespace), read in place of a cluster."""
    held: dict[str | None, list[dict[str, Any]]] = {}
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(views, "connect", lambda args: (None, args.namespace or "default"))
    monkeypatch.setattr(views, "list_rollouts", lambda kube, namespace: held.get(namespace, []))
    return held


@pytest.mark.parametrize(
    ("argv", "where"),
    [(["get", "-n", "serving"], "namespace serving"), (["get", "-A"], "any namespace")],
)
def test_no_rollouts_is_said_naming_where(
    argv: list[str], where: str, listed: dict[str | None, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().endswith(f"in {where}.") and len(err.strip().splitlines()) == 1


def test_a_named_rollout_that_is_not_there_is_said_by_name(
    listed: dict[str | None, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    listed["serving"] = [ROLLOUT]
    assert main(["get", "other", "-n", "serving"]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "other" in err and "namespace serving" in err


def test_rollouts_are_listed_and_nothing_is_said(
    listed: dict[str | None, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    listed["serving"] = [ROLLOUT]
    assert main(["get", "-n", "serving"]) == 0
    out, err = capsys.readouterr()
    assert "chat" in out and "Progressing" in out and err == ""
