"""The exit codes of the commands that talk to a cluster: one table, shown in `--help` and written into
docs/troubleshooting.md (a unit test keeps the two the same), so a CI script can branch on them."""

from __future__ import annotations

from enum import IntEnum


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


def exit_codes_help() -> str:
    """The table as plain text, for an argparse epilog."""
    return "exit codes:\n" + "\n".join(f"  {code.value}  {MEANINGS[code]}" for code in ExitCode)


def exit_codes_markdown() -> str:
    """The table as docs/troubleshooting.md carries it."""
    rows = [f"| {code.value} | {_escape_pipes(MEANINGS[code])} |" for code in ExitCode]
    return "\n".join(["| exit code | meaning |", "| --- | --- |", *rows])


def _escape_pipes(text: str) -> str:
    return text.replace("|", "\\|")
