"""How a rollout's evaluation gate looks in a terminal.

How a rollout's evaluation gate looks in a terminal: each check, its test set, every score beside
the policy it was held to, the win rate's bound, the verdicts and the decision."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from modelgate.api import Verdict
from modelgate.api.gate_status import (
    CheckStatus,
    GateDecision,
    GateStatus,
    RequestsVerdict,
    ScoreVerdict,
    SideRequestCounts,
    TokensPerTask,
)

DECISION_STYLE = {
    GateDecision.FULL: "bold green",
    GateDecision.CANARY: "cyan",
    GateDecision.REJECT: "bold red",
}
VERDICT_STYLE = {
    Verdict.PASS: "green",
    Verdict.FAIL: "bold red",
    Verdict.INCONCLUSIVE: "yellow",
    Verdict.ERROR: "magenta",
}


def _verdict(verdict: Verdict | None) -> Text:
    return Text("-", style="dim") if verdict is None else Text(verdict.value, style=VERDICT_STYLE[verdict])


def _bounds(score: ScoreVerdict) -> str:
    parts = []
    if score.min is not None:
        parts.append(f">= {score.min:g}")
    if score.max is not None:
        parts.append(f"<= {score.max:g}")
    if score.max_drop is not None:
        parts.append(f"{'rise' if score.lower_is_better else 'drop'} <= {score.max_drop:g}")
    return " and ".join(parts) or "-"


def _check_row(table: Table, check: CheckStatus) -> None:
    test_set = "-" if check.test_set is None else f"{check.test_set.name} {check.test_set.version}"
    table.add_row(
        Text(check.name, style="bold"), "", "", "", "", test_set, _verdict(check.verdict), check.message or ""
    )
    if check.requests is not None:
        _requests_rows(table, check.requests)
    for score in check.scores:
        incumbent = "-" if score.incumbent is None else f"{score.incumbent:.4g}"
        table.add_row(
            "",
            score.name,
            f"{score.candidate:.4g}",
            incumbent,
            str(score.samples),
            _bounds(score),
            _verdict(score.verdict),
            "",
        )
    rate = check.win_rate
    if rate is not None:
        table.add_row(
            "",
            "win rate",
            f"{rate.share:.3g} (bound {rate.lower_bound:.3g})",
            "-",
            str(rate.wins + rate.ties + rate.losses),
            f"bound >= {rate.min_lower_bound:g} at {rate.confidence:g}",
            _verdict(rate.verdict),
            f"{rate.wins} won, {rate.ties} tied, {rate.losses} lost",
        )
    for tokens in check.tokens:
        _tokens_row(table, tokens.name, tokens)
    if check.overall_tokens is not None:
        _tokens_row(table, "(all)", check.overall_tokens)


def _requests_rows(table: Table, requests: RequestsVerdict) -> None:
    """Both sides' requests answered over the check, then each capability where any failed."""
    table.add_row(
        "",
        "requests answered",
        _answered(requests.candidate),
        _answered(requests.incumbent),
        str(requests.candidate.asked),
        f"failed share <= {requests.max_failed_share:g}",
        _verdict(requests.verdict),
        f"failed: candidate {requests.candidate.failed}, incumbent {requests.incumbent.failed}",
    )
    for entry in requests.capabilities:
        if entry.candidate.failed or entry.incumbent.failed:
            row = (_answered(entry.candidate), _answered(entry.incumbent), str(entry.candidate.asked))
            table.add_row("", f"requests {entry.name}", *row, "", "", "")


def _answered(side: SideRequestCounts) -> str:
    return f"{side.answered} of {side.asked}"


def _mean(per_task: float | None) -> str:
    return "unknown" if per_task is None else f"{per_task:.4g}"


def _tokens_row(table: Table, name: str, tokens: TokensPerTask) -> None:
    """Both sides' output tokens per task, the ratio's bound and verdict where the policy sets one."""
    detail = [] if tokens.ratio is None else [f"ratio {tokens.ratio:.3g}"]
    if tokens.uncounted:
        detail.append(f"{tokens.uncounted} answers without a count")
    table.add_row(
        "",
        f"tokens/task {name}",
        _mean(tokens.candidate),
        _mean(tokens.incumbent),
        str(tokens.candidate_counted),
        "-" if tokens.max_ratio is None else f"ratio <= {tokens.max_ratio:g}",
        _verdict(tokens.verdict),
        ", ".join(detail),
    )


def render_gate(gate: GateStatus) -> RenderableType:
    decision = (
        Text("running", style="cyan")
        if gate.decision is None
        else Text(gate.decision.value, style=DECISION_STYLE[gate.decision])
    )
    heading = Text.assemble("Gate: ", decision, f"  {gate.message or ''}")
    table = Table(title="Gate checks", title_justify="left")
    for column in (
        "Check",
        "Score",
        "Candidate",
        "Incumbent",
        "Samples",
        "Policy / test set",
        "Verdict",
        "Detail",
    ):
        table.add_column(column)
    for check in gate.checks:
        _check_row(table, check)
    return Group(heading, table)
