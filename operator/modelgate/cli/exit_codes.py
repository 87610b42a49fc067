"""Every command's exit codes, one table: each code has one meaning whichever command exits with it,
so that a CI script can branch on it. Each command's `--help` lists the codes it exits with; the
whole table is written into docs/troubleshooting.md, and each command's rows into its own page
(tests/unit/test_cli_exit_codes.py keeps the pages the same as this table)."""

from __future__ import annotations

from enum import IntEnum

from modelgate.api.gate_result import NO_ANSWER_EXIT_CODE


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1
    USAGE = 2
    NOT_CONFIRMED = 3
    IGNORED = 4
    ROLLED_BACK = 5
    FAILED = 6
    TIMED_OUT = 7
    NO_ANSWER = NO_ANSWER_EXIT_CODE  # the operator reads it from a check Pod: gate_result.py
    CANARY = 9
    REJECTED = 10
    OVER_THE_BOUND = 11
    NOTHING_TO_SIMULATE = 12


MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "done",
    ExitCode.ERROR: "not done: no such object, an input that cannot be read, or no cluster or "
    "endpoint that answers",
    ExitCode.USAGE: "a command line that was refused",
    ExitCode.NOT_CONFIRMED: "the operator did not confirm the command within 30s",
    ExitCode.IGNORED: "the command does not apply in the rollout's phase",
    ExitCode.ROLLED_BACK: "a rollout watched RolledBack (and none Failed)",
    ExitCode.FAILED: "a rollout watched Failed (a configuration that cannot work)",
    ExitCode.TIMED_OUT: "--timeout passed before every rollout watched had ended",
    ExitCode.NO_ANSWER: "measured, but a side (named on standard error) answered none of its "
    "requests; the result is written",
    ExitCode.CANARY: "the gate's decision: a canary",
    ExitCode.REJECTED: "the gate's decision: reject",
    ExitCode.OVER_THE_BOUND: "with --fail-above P: some rule (or all together) rolls back a "
    "candidate as good as the incumbent more often than P",
    ExitCode.NOTHING_TO_SIMULATE: "nothing to simulate: no spec.analysis, or no metric that can be "
    "simulated (each is listed with why)",
}

_READ = (ExitCode.OK, ExitCode.ERROR, ExitCode.USAGE)
_STEER = (*_READ, ExitCode.NOT_CONFIRMED, ExitCode.IGNORED)
_WATCH = (*_READ, ExitCode.ROLLED_BACK, ExitCode.FAILED, ExitCode.TIMED_OUT)
# The codes each command exits with (argparse's own USAGE included).
COMMAND_CODES: dict[str, tuple[ExitCode, ...]] = {
    "run": _READ,
    "get": _READ,
    "status": _WATCH,
    "history": _READ,
    "promote": _STEER,
    "abort": _STEER,
    "resume": _STEER,
    "retry": _STEER,
    "repin": _STEER,
    "report": _READ,
    "replay": (*_READ, ExitCode.NOTHING_TO_SIMULATE),
    "plan": (*_READ, ExitCode.OVER_THE_BOUND, ExitCode.NOTHING_TO_SIMULATE),
    "refusal-proxy": _READ,
    "eval": (*_READ, ExitCode.NO_ANSWER),
    "gate": (*_READ, ExitCode.CANARY, ExitCode.REJECTED),
    "evaluations": _READ,
    "evaluate-now": _READ,
    "completion": (ExitCode.OK, ExitCode.USAGE),
}
# What a code means for one command, where that says more than the table's meaning.
DETAILS: dict[tuple[str, ExitCode], str] = {
    ("status", ExitCode.OK): "done; with -w: every rollout watched Succeeded",
    ("plan", ExitCode.OK): "the plan was printed",
    ("gate", ExitCode.OK): "the gate's decision: a full release",
    ("eval", ExitCode.OK): "measured, whatever the scores (the gate's policy judges them)",
    ("eval", ExitCode.ERROR): "could not measure: an input, an endpoint that gave no HTTP answer "
    "at all, a result too large, or its storage",
    ("replay", ExitCode.ERROR): "not done: the manifest cannot be read, or Prometheus has no history",
}


def meaning(command: str, code: ExitCode) -> str:
    return DETAILS.get((command, code), MEANINGS[code])


def exit_codes_help(command: str) -> str:
    """The command's codes as plain text, for its argparse epilog."""
    rows = [f"  {code.value:>2}  {meaning(command, code)}" for code in COMMAND_CODES[command]]
    return "exit codes:\n" + "\n".join(rows)


def exit_codes_markdown(command: str | None = None) -> str:
    """One command's codes (a page about it), or the whole table with the commands of each code
    (docs/troubleshooting.md)."""
    if command is not None:
        rows = [f"| {code.value} | {_cell(meaning(command, code))} |" for code in COMMAND_CODES[command]]
        return "\n".join(["| exit code | meaning |", "| --- | --- |", *rows])
    rows = [f"| {code.value} | {_cell(text)} | {_commands_of(code)} |" for code, text in MEANINGS.items()]
    return "\n".join(["| exit code | meaning | commands |", "| --- | --- | --- |", *rows])


def _commands_of(code: ExitCode) -> str:
    commands = [name for name, codes in COMMAND_CODES.items() if code in codes]
    others = [name for name in COMMAND_CODES if name not in commands]
    if len(others) > 1:
        return ", ".join(f"`{name}`" for name in commands)
    return "every command" + "".join(f" but `{name}`" for name in others)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")
