"""`modelgate status` at 80 columns, the width of a default terminal and of CI logs: a verdict, a
number and a header are never cut or folded, empty columns are left out, metrics that say the same
share one line; failures read as a count against a limit, a timed step as time left."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from rich.console import Console

from modelgate.api import (
    MetricAnalysis,
    ModelRolloutStatus,
    Phase,
    RollbackReason,
    RolloutRef,
    RouteState,
    Verdict,
)
from modelgate.api.internal_error_status import InternalError
from modelgate.api.pause import PauseReason, RolloutPause
from modelgate.cli.main import build_parser
from modelgate.cli.render.analysis import ANALYSIS_COLUMNS
from modelgate.cli.render.rollout import render_status
from modelgate.cli.target import read_manifest
from testbed.versions import REPO_ROOT

AT = datetime(2026, 12, 2, 12, 0, 4, tzinfo=UTC)
PLAYGROUND = read_manifest(REPO_ROOT / "examples" / "playground" / "rollout-chat-v3.yaml")
NAMES = ("time-to-first-token-p99", "error-rate-of-chat-completions", "latency-p99", "refusal-rate")
TOO_FEW = (
    "too few requests: the candidate served 3 of the 100 requests a window needs before its rate can "
    "be judged against the threshold"
)
RULE = {
    "compare": {"maxRatio": 1.5, "confidence": {"alpha": 0.05}},
    "sequential": {"alpha": 0.05, "tolerance": 1.2, "margin": 1.1},
    "failureLimit": 2,
}


def rollout(status: ModelRolloutStatus, steps: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "demo", "name": "chat"},
        "spec": {
            "incumbent": {"deployment": "chat-v2"},
            "candidate": {"deployment": "chat-v3"},
            "steps": steps or [{"setWeight": 20}, {"pause": {"duration": "30s"}}],
            "analysis": {"metrics": [{"name": name, "preset": "errorRate", **RULE} for name in NAMES]},
        },
        "status": status.to_patch(),
    }


def inconclusive(**fields: Any) -> ModelRolloutStatus:
    """Four metrics, each one failure of the two its limit allows, waiting for enough requests."""
    analysis = tuple(
        MetricAnalysis(
            name=name, verdict=Verdict.INCONCLUSIVE, time=AT, message=TOO_FEW, failures=1, **fields
        )
        for name in NAMES
    )
    return ModelRolloutStatus(
        phase=Phase.PAUSED, current_step_index=1, current_weight=20, step_started_at=AT, analysis=analysis
    )


def shown(body: dict[str, Any], now: datetime | None = None, width: int = 80) -> list[str]:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(render_status(body, live_weights=(80, 20), now=now))
    return console.export_text().splitlines()


def analysis_table(lines: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """The table's header words and each metric's row: the lines under the header's rule, one a metric."""
    start = next(index for index, line in enumerate(lines) if line.startswith("Metric"))
    rows = [line.split() for line in lines[start + 2 : start + 2 + len(NAMES)]]
    return lines[start].split(), {words[0]: words for words in rows}


def test_four_inconclusive_metrics_fit_80_columns_with_every_verdict_and_header_whole() -> None:
    lines = shown(rollout(inconclusive(value=0.0123456, incumbent_value=0.01111)))
    assert max(len(line) for line in lines) <= 80
    header, rows = analysis_table(lines)
    assert set(rows) == set(NAMES), "each metric is one row, its name whole"
    assert all(column in ANALYSIS_COLUMNS for column in header), header  # no header cut
    for words in rows.values():
        assert "Inconclusive" in words and "0.01235" in words and "0.01111" in words
    assert len(lines) <= 20, "\n".join(lines)
    text = " ".join(" ".join(lines).split())
    assert f"{', '.join(NAMES)} at 12:00:04:" in text  # one line for the metrics that say the same
    assert TOO_FEW in text and "1.5 x incumbent" in text  # nothing is left out


def test_columns_without_a_value_are_left_out() -> None:
    header, rows = analysis_table(shown(rollout(inconclusive())))
    assert "Value" not in header and "Incumbent" not in header
    assert all("Inconclusive" in words for words in rows.values())


def test_failures_read_as_a_count_against_its_limit() -> None:
    _, rows = analysis_table(shown(rollout(inconclusive())))
    assert "1 (limit 2)" in " ".join(rows["latency-p99"])


def test_a_timed_pause_shows_the_time_left_from_now() -> None:
    body = rollout(inconclusive())
    text = "\n".join(shown(body, now=AT + timedelta(seconds=20)))
    assert "pause 30s (10s left)" in text
    assert "left" not in "\n".join(shown(body, now=None))


def test_a_rollback_says_what_to_do_next() -> None:
    status = inconclusive().model_copy(
        update={
            "phase": Phase.ROLLED_BACK,
            "current_weight": 0,
            "rollback_reason": RollbackReason(time=AT, message="metric latency-p99 breached"),
        }
    )
    text = " ".join(" ".join(shown(rollout(status), now=AT)).split())
    assert "modelgate report chat -n demo" in text and "modelgate retry chat -n demo" in text
    assert "left" not in text  # a rolled-back rollout's pause is over


@pytest.mark.parametrize(
    ("prometheus", "switched"),
    [
        (PLAYGROUND["spec"]["analysis"]["prometheus"]["address"], True),  # the demo's is alike
        ("http://localhost:9090", True),  # a port-forward
        ("http://prometheus.monitoring:9090", False),
    ],
)
def test_the_report_command_a_rollback_prints_works_as_printed(prometheus: str, switched: bool) -> None:
    """Against a loopback Prometheus `report` needs the switch, which the printed command carries."""
    status = ModelRolloutStatus(
        phase=Phase.ROLLED_BACK, rollback_reason=RollbackReason(time=AT, message="metric breached")
    )
    body = rollout(status)
    body["spec"]["analysis"]["prometheus"] = {"address": prometheus}
    text = " ".join(" ".join(shown(body, now=AT)).split())
    printed = re.search(r"`(modelgate report [^`]*)`", text)
    assert printed is not None, text
    args = build_parser().parse_args(printed.group(1).split()[1:])
    assert (args.command, args.name, args.namespace) == ("report", "chat", "demo")
    assert args.allow_loopback is switched


def test_a_pause_says_why_since_when_and_what_ends_it() -> None:
    """From status.pause: a reader needs no condition's reason to tell why the rollout waits."""
    resumable = RolloutPause(reason=PauseReason.PROMETHEUS_ERRORS, since=AT, message="queries failed")
    held = ModelRolloutStatus(phase=Phase.PAUSED, current_weight=20, step_started_at=AT, pause=resumable)
    text = " ".join(" ".join(shown(rollout(held))).split())  # wrapped at 80 columns
    assert "PrometheusErrors since 2026-12-02 12:00:04 UTC" in text, text
    assert "modelgate resume chat -n demo" in text, text
    promotable = held.model_copy(
        update={"pause": resumable.model_copy(update={"reason": PauseReason.INDEFINITE_STEP})}
    )
    assert "modelgate promote chat -n demo" in " ".join(" ".join(shown(rollout(promotable))).split())
    assert "modelgate resume" not in " ".join(shown(rollout(held.model_copy(update={"pause": None}))))


def test_a_rollout_held_by_another_rollouts_claim_names_the_owner_and_offers_no_resume() -> None:
    owner = RolloutRef(namespace="demo", name="chat-older", uid="uid-older")
    claimed = RolloutPause(reason=PauseReason.ROUTE_CLAIMED, since=AT, message="chat-older owns the rule")
    held = ModelRolloutStatus(
        phase=Phase.PENDING, pause=claimed, route_owner=owner, route_state=RouteState.CLAIMED
    )
    text = " ".join(" ".join(shown(rollout(held))).split())
    assert text.count(str(owner)) == 2, text  # who steers the rule, and that its end ends the hold
    assert "modelgate resume" not in text  # a command would let two rollouts write one rule


def test_a_rollout_failed_by_an_internal_error_says_so_and_what_to_do() -> None:
    error = InternalError(time=AT, type="OverflowError", message="cannot convert float infinity to integer")
    failed = ModelRolloutStatus(phase=Phase.FAILED, current_weight=0, live_weight=0, internal_error=error)
    text = " ".join(" ".join(shown(rollout(failed))).split())
    assert "Internal error in the operator (a bug): OverflowError: cannot convert float" in text, text
    assert "modelgate retry chat -n demo" in text, text
    assert "Internal error" not in " ".join(
        shown(rollout(failed.model_copy(update={"internal_error": None})))
    )
