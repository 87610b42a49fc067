"""`modelgate evaluations NAME -o json|FILE|s3://...`: the evaluation's history (its runs, each check's
scores per run oldest first, the baseline) as JSON, to stdout or written where `modelgate report`
writes its page."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from modelgate.api.evaluation_status import BaselineScore, BaselineStatus, ModelEvaluationStatus
from modelgate.api.statusmodel import Verdict
from modelgate.cli import evaluations
from modelgate.cli.exit_codes import ExitCode
from tests.unit.test_evaluation_trend import run

CHECK = "a-check-with-a-rather-long-name"
BASELINE = BaselineStatus(source="run/x", scores=(BaselineScore(check=CHECK, name="math", value=0.8),))
# Newest first, as status keeps them.
STATUS = ModelEvaluationStatus(
    runs=(run(10, 0.6, Verdict.FAIL), run(5, 0.8, Verdict.PASS)), baseline=BASELINE
)


class OneEvaluation:
    def get_custom(self, group: str, version: str, namespace: str, plural: str, name: str) -> dict[str, Any]:
        status = STATUS.model_dump(by_alias=True, mode="json")
        return {"metadata": {"name": name}, "spec": {"schedule": "@hourly"}, "status": status}


def trend(monkeypatch: pytest.MonkeyPatch, name: str | None, output: str | None) -> int:
    monkeypatch.setattr(evaluations, "connect", lambda args: (OneEvaluation(), "serving"))
    args = argparse.Namespace(name=name, output=output, namespace=None, kubeconfig=None)
    return evaluations.show_trend(args)


def test_json_to_stdout_holds_the_runs_the_score_series_and_the_baseline(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert trend(monkeypatch, "chat-eval", "json") == 0
    history = json.loads(capsys.readouterr().out)
    assert (history["namespace"], history["name"], history["schedule"]) == ("serving", "chat-eval", "@hourly")
    assert [r["id"] for r in history["runs"]] == [r.id for r in STATUS.runs]
    series = history["scores"][CHECK]["math"]
    assert [(s["run"], s["value"], s["verdict"]) for s in series] == [
        (STATUS.runs[1].id, 0.8, "Pass"),
        (STATUS.runs[0].id, 0.6, "Fail"),
    ], "oldest first"
    assert BaselineStatus.model_validate(history["baseline"]) == BASELINE


def test_a_file_output_is_written_as_the_reports_is(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "history.json"
    assert trend(monkeypatch, "chat-eval", str(target)) == 0
    assert len(json.loads(target.read_text())["runs"]) == len(STATUS.runs)


def test_an_output_needs_one_evaluation_and_a_bad_address_is_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert trend(monkeypatch, None, "json") == ExitCode.USAGE
    assert trend(monkeypatch, "chat-eval", "s3://Not A Bucket/x") == ExitCode.ERROR
    assert "s3://Not A Bucket/x" in capsys.readouterr().err
