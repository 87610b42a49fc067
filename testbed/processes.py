"""Starting and stopping the bed's processes. Each start is recorded (pid and the binary's path)
in a JSON file, so another process (`make cluster-down`) stops exactly what was started, by pid,
and never a process that merely reuses a recorded pid."""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import structlog

from testbed.forkserver import ForkServer
from testbed.versions import REPO_ROOT

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class StartedProcess:
    name: str
    pid: int
    executable: str
    log_file: str


def python_module_env() -> dict[str, str]:
    """The environment for `python -m testbed.<module>` children: the test bed is not installed,
    it is imported from the repository."""
    paths = [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {"PYTHONPATH": os.pathsep.join(paths)}


MODELGATE_ENTRY = "modelgate.cli.main:main"  # the `modelgate` command, for `start_python`


@functools.cache
def fork_server(module: str) -> ForkServer:
    """This process's fork server for entry points of `module`, closed when the process exits. It
    imports that module alone, so that a forked process holds what its own `python -m` would (the
    benchmarks measure the operator's memory)."""
    server = ForkServer(python_module_env(), preload=[module])
    atexit.register(server.close)
    return server


class ProcessRegistry:
    """The processes one bed started, persisted in `<state>/processes.json`."""

    def __init__(self, state_dir: Path) -> None:
        self.state_dir = state_dir
        self._file = state_dir / "processes.json"

    def load(self) -> list[StartedProcess]:
        if not self._file.exists():
            return []
        return [StartedProcess(**entry) for entry in json.loads(self._file.read_text())]

    def _save(self, processes: Sequence[StartedProcess]) -> None:
        tmp = self._file.with_suffix(".tmp")
        tmp.write_text(json.dumps([asdict(p) for p in processes], indent=2))
        tmp.replace(self._file)

    def start(
        self, name: str, argv: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> StartedProcess:
        log_path = self._log_file(name)
        with log_path.open("ab") as out:
            # A new session: the bed outlives `make cluster-up`, and Ctrl-C in a test run
            # reaches pytest rather than every component at once.
            child = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                start_new_session=True,
            )
        return self._record(StartedProcess(name, child.pid, str(Path(argv[0]).resolve()), str(log_path)))

    def start_python(
        self, name: str, entry: str, args: Sequence[str], *, env: Mapping[str, str] | None = None
    ) -> StartedProcess:
        """Like `start` of `python -m MODULE ARGS`, for an entry point (`module:function`, called with
        ARGS) of a module the fork server has imported: forked, it starts without importing anything."""
        log_path = self._log_file(name)
        pid = fork_server(entry.partition(":")[0]).spawn(entry, args, log_path, env or {})
        return self._record(StartedProcess(name, pid, str(Path(sys.executable).resolve()), str(log_path)))

    def _log_file(self, name: str) -> Path:
        logs = self.state_dir / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        log_path = logs / f"{name}.log"
        if log_path.exists() and log_path.stat().st_size and not _ends_with_newline(log_path):
            # The previous run was killed between a line and its newline: start on a line of our own.
            with log_path.open("ab") as out:
                out.write(b"\n")
        return log_path

    def _record(self, started: StartedProcess) -> StartedProcess:
        self._save([*self.load(), started])
        log.info("process started", component=started.name, pid=started.pid, log=started.log_file)
        return started

    def is_running(self, process: StartedProcess) -> bool:
        return _executable_of(process.pid) == process.executable

    def stop_all(self, timeout: float = 15.0, *, last: Sequence[str] = ()) -> None:
        """Stops the recorded processes, the last started first, except that those named in `last`
        are stopped after all the others, in that order."""
        started = list(reversed(self.load()))
        named = [p for name in last for p in started if p.name == name]
        for process in [*(p for p in started if p not in named), *named]:
            self.stop(process, timeout)
        self._file.unlink(missing_ok=True)

    def kill(self, process: StartedProcess, timeout: float = 15.0) -> None:
        """SIGKILLs one recorded process (no cleanup, as when its node dies) and forgets it."""
        if self.is_running(process):
            os.kill(process.pid, signal.SIGKILL)
            wait_exited(process.pid, timeout)
            log.info("process killed", component=process.name, pid=process.pid)
        self._save([p for p in self.load() if p != process])

    def stop(self, process: StartedProcess, timeout: float = 15.0) -> None:
        """Stops one recorded process and forgets it."""
        if self.is_running(process):
            os.kill(process.pid, signal.SIGTERM)
            if not wait_exited(process.pid, timeout):
                log.warning("process ignored SIGTERM; killing", component=process.name, pid=process.pid)
                os.kill(process.pid, signal.SIGKILL)
                wait_exited(process.pid, timeout)
            log.info("process stopped", component=process.name, pid=process.pid)
        self._save([p for p in self.load() if p != process])


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as log:
        log.seek(-1, os.SEEK_END)
        return log.read(1) == b"\n"


def descendants(pid: int) -> list[int]:
    """The processes `pid` started, and theirs (a supervised component runs as a child)."""
    children: list[int] = []
    with contextlib.suppress(OSError):  # gone meanwhile
        for task in Path(f"/proc/{pid}/task").iterdir():
            children += [int(child) for child in (task / "children").read_text().split()]
    return [*children, *(grandchild for child in children for grandchild in descendants(child))]


def _executable_of(pid: int) -> str | None:
    try:
        return str(Path(f"/proc/{pid}/exe").readlink()).removesuffix(" (deleted)")
    except OSError:
        return None


def wait_exited(pid: int, timeout: float) -> bool:
    """Whether every thread of the process ended within `timeout`: a killed process's main thread
    can be a zombie while its other threads still run and hold its files. Its sockets may close a
    moment later still, so a restart on the same port waits for the port (OperatorProcess.start)."""
    born = start_time(pid)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap(pid)
        if start_time(pid) != born or _threads_exited(pid):  # reaped (perhaps its pid reused), or dead
            _reap(pid)
            return True
        time.sleep(0.05)
    return False


def _reap(pid: int) -> None:
    # Our own children must be reaped or they linger as zombies; others are not ours to wait for.
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _stat_fields(path: Path) -> list[str]:
    """The fields of a /proc stat file after the command name, from the state (field 3) on."""
    return path.read_text().rsplit(")", 1)[1].split()


def start_time(pid: int) -> str | None:
    try:
        return _stat_fields(Path(f"/proc/{pid}/stat"))[19]  # field 22, in clock ticks since boot
    except OSError:
        return None


def _threads_exited(pid: int) -> bool:
    try:
        states = [_stat_fields(task / "stat")[0] for task in Path(f"/proc/{pid}/task").iterdir()]
    except OSError:
        return True  # reaped meanwhile
    return all(state in ("Z", "X") for state in states)
