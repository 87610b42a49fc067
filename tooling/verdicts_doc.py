"""The generated verdict tables of docs/metric-presets.md, from the verdict rules as the code has them
(`tooling.verdict_rules`, checked against `analysis.evaluate` by tests/unit/test_verdict_rules.py)."""

from __future__ import annotations

from tooling.verdict_rules import VERDICT_RULES, verdict_effects


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def verdict_rules_table() -> list[str]:
    lines = [
        "| # | when | metrics | verdict | needs `minRequests` |",
        "| --- | --- | --- | --- | --- |",
    ]
    for number, rule in enumerate(VERDICT_RULES, start=1):
        lines.append(
            f"| {number} | {_cell(rule.when)} | {rule.metrics} | `{rule.verdict}` | {rule.min_requests} |"
        )
    return lines


def verdict_effects_table() -> list[str]:
    lines = ["| verdict | counts toward `failureLimit` | effect |", "| --- | --- | --- |"]
    for effect in verdict_effects():
        counts = "yes" if effect.counts_as_failure else "no"
        lines.append(f"| `{effect.verdict}` | {counts} | {_cell(effect.effect)} |")
    return lines
