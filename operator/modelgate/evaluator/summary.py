"""The human summary of a run: a table of the scores and the judge's line. Pure: text out."""

from __future__ import annotations

import io

from rich.console import Console
from rich.table import Table

from modelgate.api.gate_result import CapabilityTokens, GateResult, Requests, Score, SideRequests
from modelgate.evaluator.result import NEUTRAL_SCORES, is_worse, per_task_text, tokens_text, win_rate_text


def summary_text(result: GateResult, *, width: int = 100) -> str:
    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, highlight=False)
    if result.test_set is not None:
        identity = result.test_set
        console.print(
            f"Test set {identity.name}, version {identity.version}, dated {identity.date.isoformat()}"
        )
    if result.requests is not None:
        console.print(f"Requests answered: {_requests_text(result.requests)}")
    if result.scores:
        console.print(_table(result.scores))
    if result.tokens:
        console.print(_tokens_table(result.tokens))
        console.print(tokens_text(result.tokens).capitalize())
    if result.win_rate is not None:
        judge = f" ({result.win_rate.judge})" if result.win_rate.judge else ""
        console.print(f"Blind pairwise judge{judge}: {win_rate_text(result.win_rate)}")
    return out.getvalue()


def _requests_text(requests: Requests) -> str:
    return f"candidate {_answered(requests.candidate)}, incumbent {_answered(requests.incumbent)}"


def _answered(side: SideRequests) -> str:
    failed = f" ({side.failed} failed)" if side.failed else ""
    return f"{side.answered} of {side.asked}{failed}"


def _table(scores: tuple[Score, ...]) -> Table:
    table = Table("score", "candidate", "incumbent", "change", "samples", "candidate is")
    for score in scores:
        if score.incumbent is None:
            table.add_row(score.name, f"{score.candidate:g}", "", "", str(score.samples), "")
            continue
        difference = score.candidate - score.incumbent
        change = f"{difference:+.4g}" if difference else "0"
        table.add_row(
            score.name,
            f"{score.candidate:g}",
            f"{score.incumbent:g}",
            change,
            str(score.samples),
            _verdict(score),
        )
    return table


def _tokens_table(tokens: tuple[CapabilityTokens, ...]) -> Table:
    table = Table("capability", "candidate tokens/task", "incumbent tokens/task")
    for entry in tokens:
        table.add_row(entry.name, per_task_text(entry.candidate), per_task_text(entry.incumbent))
    return table


def _verdict(score: Score) -> str:
    if score.name in NEUTRAL_SCORES:
        return ""
    if score.candidate == score.incumbent:
        return "the same"
    return "worse" if is_worse(score) else "better"
