"""A PromQL query is broken into lines only between tokens: in `modelgate status` at 80 columns and
in the HTML report, every name, string, number and duration stays whole."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from rich.console import Console

from modelgate.api import ModelRolloutStatus, Phase, RollbackReason
from modelgate.cli.render.promql import promql_html, promql_lines, tokens
from modelgate.cli.render.rollout import render_status

LONG = (
    'sum(rate(vllm:request_success_total{namespace="serving",pod=~"chat-v2-[a-z0-9]+-[a-z0-9]{5}",'
    'finished_reason!="abort"}[1m])) / clamp_min(sum(rate(vllm:e2e_request_latency_seconds_count'
    '{namespace="serving",pod=~"chat-v2-[a-z0-9]+-[a-z0-9]{5}"}[1m])), 1e-9) > 0.05 and on() '
    "histogram_quantile(0.99, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket[5m])))"
)
WHOLE = tokens(LONG)


def test_the_tokens_are_the_query() -> None:
    assert "".join(WHOLE) == LONG
    assert '"chat-v2-[a-z0-9]+-[a-z0-9]{5}"' in WHOLE and "vllm:request_success_total" in WHOLE
    assert {"1m", "5m", "1e-9", "0.99", "!=", "=~"} <= set(WHOLE)


@pytest.mark.parametrize("width", [20, 37, 50, 72, 80])
def test_lines_fit_and_break_only_between_tokens(width: int) -> None:
    lines = promql_lines(LONG, width)
    longest_token = max(len(t) for t in WHOLE)
    assert all(len(line) <= max(width, longest_token) for line in lines)
    assert "".join(lines).replace(" ", "") == LONG.replace(" ", "")
    # Each line is a run of whole tokens: together, the query's tokens in order.
    assert [t for line in lines for t in tokens(line) if not t.isspace()] == [
        t for t in WHOLE if not t.isspace()
    ]


def test_status_at_80_columns_shows_the_rollbacks_query_with_whole_tokens() -> None:
    reason = RollbackReason(
        time=datetime(2026, 1, 5, tzinfo=UTC), message="metric errors: too many", query=LONG
    )
    status = ModelRolloutStatus(phase=Phase.ROLLED_BACK, rollback_reason=reason)
    body = {
        "metadata": {"namespace": "serving", "name": "chat"},
        "spec": {"incumbent": {"deployment": "chat-v1"}, "candidate": {"deployment": "chat-v2"}, "steps": []},
        "status": status.to_patch(),
    }
    console = Console(width=80, record=True)
    console.print(render_status(body))
    shown = console.export_text()
    assert all(len(line) <= 80 for line in shown.splitlines())
    start = shown.index("query:")
    printed = re.sub(r"\s+", "", shown[start + len("query:") : shown.index("Next:")])
    assert printed == LONG.replace(" ", "")
    for token in WHOLE:
        if not token.isspace():
            assert token in shown, token  # on one line


def test_the_report_lets_the_browser_break_between_tokens_only() -> None:
    html = promql_html(LONG)
    pieces = html.split("<wbr>")
    assert len(pieces) == len(WHOLE)
    assert "break-all" not in html
