"""Starting the bed's Python processes by forking one that has already imported them.

A `make test` starts a few hundred Python processes (model-server doubles, refusal proxies,
operators, the tests' `modelgate` commands), and each spent most of a second of CPU importing
aiohttp, pydantic, kopf and the Kubernetes client before it did anything. A fork server imports a
module once; each process is then forked from it and calls its entry point (`module:function`,
given the argument list), in a session of its own with its output appended to its log file, exactly
as a `python -m` child would run.

The server is this process's child and reads requests (one JSON object per line) on its standard
input: it ends when that closes, so it never outlives the test run that started it. Its children do
not depend on it; they are stopped by pid, like every process of the bed (testbed/processes.py).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

MAX_FD = 1 << 20


class ForkServerError(RuntimeError):
    pass


class ForkServer:
    """The client: starts the server on first use and asks it for processes."""

    def __init__(self, env: Mapping[str, str], preload: Sequence[str]) -> None:
        self.env = dict(env)  # added to this process's environment for the server
        self.preload = tuple(preload)  # imported by the server before it forks
        self._server: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()

    def spawn(
        self,
        entry: str,
        args: Sequence[str],
        log_file: Path,
        env: Mapping[str, str],
        command: Mapping[str, str] | None = None,
    ) -> int:
        """The pid of a new process running `entry(args)`, with `env` added to its environment
        (`command`: the fields of `run`'s request)."""
        request = {
            "entry": entry,
            "args": list(args),
            "log": str(log_file),
            "env": dict(env),
            **(command or {}),
        }
        with self._lock:
            server = self._running_server()
            assert server.stdin is not None and server.stdout is not None
            server.stdin.write(json.dumps(request).encode() + b"\n")
            server.stdin.flush()
            reply = server.stdout.readline()
        if not reply:
            ended = f"the fork server ended (exit code {server.poll()})"
            raise ForkServerError(f"{ended} before starting {entry}")
        answer: dict[str, Any] = json.loads(reply)
        if "error" in answer:
            raise ForkServerError(f"the fork server could not start {entry}: {answer['error']}")
        return int(answer["pid"])

    def start(
        self, entry: str, args: Sequence[str], output: Path, env: Mapping[str, str], cwd: Path
    ) -> ForkedProcess:
        """A process running `entry(args)` in `cwd` with exactly the environment `env`, its output and
        errors appended to `output`, as a container's command runs; its exit status is kept beside
        `output`, so it can be polled like a child of this process."""
        status = output.with_name(f"{output.name}.status")
        status.unlink(missing_ok=True)  # an earlier run's, with the same output
        command = {"status": str(status), "replace_env": "1", "cwd": str(cwd)}
        return ForkedProcess(self.spawn(entry, args, output, env, command), status)

    def run(
        self, entry: str, args: Sequence[str], env: Mapping[str, str], timeout: float
    ) -> subprocess.CompletedProcess[str]:
        """As `subprocess.run` of `python -m` with exactly the environment `env`, output captured,
        no input; forked, so it starts without importing what the server has imported."""
        with tempfile.TemporaryDirectory(prefix="forkrun-") as scratch:
            files = {name: Path(scratch) / name for name in ("stdout", "stderr", "status")}
            command = {"stderr": str(files["stderr"]), "status": str(files["status"]), "replace_env": "1"}
            process = ForkedProcess(self.spawn(entry, args, files["stdout"], env, command), files["status"])
            try:
                status = process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                raise subprocess.TimeoutExpired([entry, *args], timeout) from None
            if status == KILLED:
                raise ForkServerError(f"{entry} {list(args)} ended without an exit status: killed?")
            output = {name: files[name].read_text() for name in ("stdout", "stderr")}
        return subprocess.CompletedProcess([entry, *args], status, output["stdout"], output["stderr"])

    def close(self) -> None:
        with self._lock:
            if self._server is not None:
                with contextlib.suppress(OSError):
                    assert self._server.stdin is not None
                    self._server.stdin.close()  # the server ends on end of input
                self._server.wait()
                self._server = None

    def _running_server(self) -> subprocess.Popen[bytes]:
        if self._server is None or self._server.poll() is not None:
            self._server = subprocess.Popen(
                [sys.executable, "-m", "testbed.forkserver", *self.preload],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env={**os.environ, **self.env},
            )
        return self._server


KILLED = -signal.SIGKILL  # the status of a forked process that ended without writing its own


class ForkedProcess:
    """A process the fork server started, polled and killed like a `subprocess.Popen` (it is the
    server's child, not ours: its exit status comes through its status file)."""

    def __init__(self, pid: int, status_file: Path) -> None:
        self.pid = pid
        self.status_file = status_file

    def poll(self) -> int | None:
        """Its exit status once it has ended; KILLED if it ended without writing one."""
        if self.status_file.exists():
            return int(self.status_file.read_text())
        if Path(f"/proc/{self.pid}").exists():
            return None
        # Ended between the two looks: the status may have been written meanwhile.
        return int(self.status_file.read_text()) if self.status_file.exists() else KILLED

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        deadline = math.inf if timeout is None else time.monotonic() + timeout
        while (status := self.poll()) is None:
            if time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(str(self.pid), timeout or 0)
            time.sleep(0.01)
        return status


def serve(requests: Any, replies: int) -> None:
    """The server's loop: one fork per request line; a reply line with the child's pid or an error."""
    signal.signal(signal.SIGCHLD, _reap_children)
    for line in requests:
        try:
            request = json.loads(line)
            entry = _entry_point(request["entry"])
            if threading.active_count() != 1:  # forking a threaded process copies held locks
                raise ForkServerError("the fork server has started a thread; it cannot fork safely")
            pid = os.fork()
            if pid == 0:
                _run_child(entry, request)
            reply: dict[str, Any] = {"pid": pid}
        except Exception as error:  # the request's fault: say so and serve the next
            reply = {"error": f"{type(error).__name__}: {error}"}
        os.write(replies, json.dumps(reply).encode() + b"\n")


def _entry_point(entry: str) -> Any:
    module, _, function = entry.partition(":")
    return getattr(importlib.import_module(module), function)


def _run_child(entry: Any, request: dict[str, Any]) -> None:
    """In the forked child: becomes the process `python -m` would have started, and never returns.
    Its output goes to the request's log (its errors to `stderr`, if given); with `replace_env`,
    `env` is its whole environment; with `cwd`, it runs there; with `status`, its exit status is
    written there at the end."""
    status = 1
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()
        output = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        errors = os.open(request.get("stderr", request["log"]), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        nothing = os.open(os.devnull, os.O_RDONLY)
        for target, source in ((0, nothing), (1, output), (2, errors)):
            os.dup2(source, target)
        os.closerange(3, MAX_FD)  # the server's pipes above all: its client must see them close with it
        sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
        sys.stderr.reconfigure(line_buffering=True)  # type: ignore[union-attr]
        if request.get("replace_env"):
            os.environ.clear()
        os.environ.update(request["env"])
        if "cwd" in request:
            os.chdir(request["cwd"])
        sys.argv = [
            entry.__module__.partition(".")[0],
            *request["args"],
        ]  # argparse names the program after it
        status = _exit_status(entry(request["args"]))
    except SystemExit as exit_:
        status = _exit_status(exit_.code)
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        if "status" in request:
            _write_status(request["status"], status)
        os._exit(status)


def _write_status(path: str, status: int) -> None:
    """Whole or not at all: the client takes the file's appearance as the end of the process."""
    with contextlib.suppress(OSError):
        written = Path(f"{path}.tmp")
        written.write_text(str(status))
        written.replace(path)


def _exit_status(code: object) -> int:
    """As Python's own exit: None is success, a number is the status, anything else is printed."""
    if code is None or isinstance(code, int):
        return code or 0
    print(code, file=sys.stderr)
    return 1


def _reap_children(_signum: int, _frame: Any) -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass


def main(preload: Sequence[str]) -> None:
    for module in preload:
        importlib.import_module(module)
    # Replies go to the pipe the client reads; a stray print of a preloaded module goes to stderr.
    replies = os.dup(1)
    os.dup2(2, 1)
    serve(sys.stdin.buffer, replies)


if __name__ == "__main__":
    main(sys.argv[1:])
