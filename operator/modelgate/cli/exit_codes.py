"""The exit codes of the commands that talk to a cluster: one table, shown in `--help` and written into
docs/troubleshooting.md (a unit test keeps the two the same), so a CI script can branch on them; and
`modelgate eval`'s own, shown in its `--help` and written into docs/gate-eval.md."""

from __future__ import annotations

from collections.abc import Mapping
from enum import IntEnum

from modelgate.api.gate_result import NO_ANSWER_EXIT_CODE


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1
    USAGE = 2
    NOT_APPLIED = 3
    IGNORED = 4
    ROLLED_BACK = 5
    FAILED = 6
    TIMED_OUT = 7


MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "done; `status -w`: every rollout Succeeded",
    ExitCode.ERROR: "no such rollout, an unreadable one, or no cluster to ask",
    ExitCode.USAGE: "a command line argparse refused",
    ExitCode.NOT_APPLIED: "promote|abort|resume|retry: the operator did not confirm the command in 30s",
    ExitCode.IGNORED: "promote|abort|resume|retry: the command does not apply in the rollout's phase",
    ExitCode.ROLLED_BACK: "`status -w`: a rollout RolledBack (and none Failed)",
    ExitCode.FAILED: "`status -w`: a rollout Failed (a configuration that cannot work)",
    ExitCode.TIMED_OUT: "`status -w --timeout`: not every rollout had ended in time",
}


class EvalExitCode(IntEnum):
    """`modelgate eval`'s; NO_ANSWER is unlike any other command's code, so a script cannot take
    it for another's."""

    MEASURED = 0
    COULD_NOT_MEASURE = 1
    USAGE = 2
    NO_ANSWER = NO_ANSWER_EXIT_CODE


EVAL_MEANINGS: dict[EvalExitCode, str] = {
    EvalExitCode.MEASURED: "measured, whatever the scores (the gate's policy judges them)",
    EvalExitCode.COULD_NOT_MEASURE: "could not measure: an input, an endpoint that gave no HTTP "
    "answer at all, a result too large, or its storage",
    EvalExitCode.USAGE: "a command line argparse refused",
    EvalExitCode.NO_ANSWER: "measured, but a side (named on standard error) answered none of its "
    "requests; the result is written",
}


Meanings = Mapping[ExitCode, str] | Mapping[EvalExitCode, str]


def exit_codes_help(meanings: Meanings = MEANINGS) -> str:
    """The table as plain text, for an argparse epilog."""
    return "exit codes:\n" + "\n".join(f"  {code.value}  {meaning}" for code, meaning in meanings.items())


def exit_codes_markdown(meanings: Meanings = MEANINGS) -> str:
    """The table as docs/troubleshooting.md (or docs/gate-eval.md) carries it."""
    rows = [f"| {code.value} | {_escape_pipes(meaning)} |" for code, meaning in meanings.items()]
    return "\n".join(["| exit code | meaning |", "| --- | --- |", *rows])


def _escape_pipes(text: str) -> str:
    return text.replace("|", "\\|")
