"""Entry points for testbed.forkserver's tests, in a module that imports only the standard library
(the server imports it before forking)."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path


def report(args: list[str]) -> int:
    """An entry point: prints what it was given and what it runs in, and exits with the status asked."""
    print(
        json.dumps(
            {
                "args": args,
                "argv": sys.argv[1:],
                "own_session": os.getsid(0) == os.getpid(),
                "stdin": sys.stdin.read(),
                "env": os.environ.get("FORK_TEST"),
                "inherited_files": [fd for fd in range(3, 1024) if _is_open(fd)],
            }
        )
    )
    if args and args[0] == "exit-with-message":
        raise SystemExit("the entry point gave up")
    return 0


def wait_for_sigterm(_: list[str]) -> int:
    signal.pause()
    return 0


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def answer(args: list[str]) -> int:
    """An entry point that prints its arguments, and the environment it sees, on standard output, a
    line on standard error, and exits with the number it was given first."""
    print(json.dumps({"args": args, "env": dict(os.environ), "cwd": str(Path.cwd())}))
    print("to standard error", file=sys.stderr)
    return int(args[0])
