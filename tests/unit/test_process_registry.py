"""testbed.processes: stop_all stops the last started first, except the processes it is told to stop
last (the API server and etcd, which the others need in order to stop quickly); a process has
exited only once all its threads have."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
from pathlib import Path

from testbed.ports import bindable
from testbed.processes import ProcessRegistry, StartedProcess, wait_exited
from testbed.waiting import wait_for

STARTED_IN_ORDER = ("etcd", "kube-apiserver", "controller", "double")


def test_the_processes_named_last_stop_after_the_others_in_the_order_named(tmp_path: Path) -> None:
    registry = ProcessRegistry(tmp_path)
    stopped = tmp_path / "stopped"
    started = {name: _start_trapping(registry, stopped, name) for name in STARTED_IN_ORDER}
    registry.stop(started["kube-apiserver"])  # a test restarts it: it is now the last started
    _start_trapping(registry, stopped, "kube-apiserver")
    stopped.unlink()
    registry.stop_all(timeout=30, last=("kube-apiserver", "etcd"))
    assert stopped.read_text().split() == ["double", "controller", "kube-apiserver", "etcd"]
    assert registry.load() == []


def _start_trapping(registry: ProcessRegistry, record: Path, name: str) -> StartedProcess:
    """A process that writes its name to `record` when SIGTERM stops it, waited for until its trap
    is set: a SIGTERM before that ends the shell without a word (seen once under load)."""
    ready = record.with_name(f"{name}.ready")
    ready.unlink(missing_ok=True)
    script = f"trap 'echo {name} >> {record}; exit 0' TERM; : > {ready}; while :; do sleep 0.05; done"
    process = registry.start(name, ["/bin/sh", "-c", script])
    wait_for(ready.exists, timeout=30, what=f"{name}'s SIGTERM trap")
    return process


def test_a_process_has_exited_only_once_every_thread_has(tmp_path: Path) -> None:
    """Its main thread gone (a zombie, as a killed process's main thread can be for a while) and
    another thread still holding a listening port: not exited until that thread ends too, and the
    port is free soon after."""
    port_file = tmp_path / "port"
    process = subprocess.Popen([sys.executable, "-c", _MAIN_THREAD_EXITS_FIRST, str(port_file)])
    try:
        port = int(
            wait_for(lambda: port_file.exists() and port_file.read_text(), timeout=30, what="the port")
        )
        wait_for(lambda: _main_thread_state(process.pid) == "Z", timeout=30, what="the main thread's exit")
        assert not wait_exited(process.pid, timeout=0.5)
        os.kill(process.pid, signal.SIGKILL)
        assert wait_exited(process.pid, timeout=30)
        wait_for(
            functools.partial(bindable, port, reuse_address=True), timeout=30, what=f"port {port} to be free"
        )
    finally:
        process.kill()
        process.wait()


# Binds a port, holds it in a second thread, and ends its main thread alone (pthread_exit).
_MAIN_THREAD_EXITS_FIRST = """
import ctypes, socket, sys, threading, time
server = socket.create_server(("127.0.0.1", 0))
threading.Thread(target=time.sleep, args=(600,)).start()
open(sys.argv[1], "w").write(str(server.getsockname()[1]))
ctypes.CDLL(None).pthread_exit(None)
"""


def _main_thread_state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
