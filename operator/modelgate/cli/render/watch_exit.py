"""When `modelgate status -w` stops, and with which exit code: pure functions of the rollouts read."""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import Any

from modelgate.api import Phase
from modelgate.api.duration import parse_duration
from modelgate.cli.exit_codes import ExitCode

# Worst first: the code of the worst phase among the rollouts watched.
ENDED = {Phase.FAILED.value: ExitCode.FAILED, Phase.ROLLED_BACK.value: ExitCode.ROLLED_BACK}
ENDED_WELL = Phase.SUCCEEDED.value


def has_ended(body: dict[str, Any]) -> bool:
    """Ended, for the spec as it is now: a phase the operator left for the previous spec (a candidate
    applied a moment ago) is not this rollout's end."""
    status = body.get("status") or {}
    if status.get("phase") not in (*ENDED, ENDED_WELL):
        return False
    observed = status.get("observedGeneration")
    return observed is None or observed == body["metadata"].get("generation")


def watch_outcome(rollouts: list[dict[str, Any]]) -> ExitCode | None:
    """None while any rollout is still going; else the code of the worst outcome."""
    if not all(has_ended(body) for body in rollouts):
        return None
    phases = {(body.get("status") or {}).get("phase") for body in rollouts}
    return next((code for phase, code in ENDED.items() if phase in phases), ExitCode.OK)


def timeout_argument(text: str) -> timedelta:
    """argparse's type for --timeout: a Go-style duration, as the CRD's."""
    try:
        return parse_duration(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error
