"""testbed.processes.ProcessRegistry.stop_all: the last started stops first, except the processes it
is told to stop last (the API server and etcd, which the others need in order to stop quickly)."""

from __future__ import annotations

from pathlib import Path

from testbed.processes import ProcessRegistry

STARTED_IN_ORDER = ("etcd", "kube-apiserver", "controller", "double")


def test_the_processes_named_last_stop_after_the_others_in_the_order_named(tmp_path: Path) -> None:
    registry = ProcessRegistry(tmp_path)
    stopped = tmp_path / "stopped"
    started = {name: registry.start(name, _until_sigterm(stopped, name)) for name in STARTED_IN_ORDER}
    registry.stop(started["kube-apiserver"])  # a test restarts it: it is now the last started
    registry.start("kube-apiserver", _until_sigterm(stopped, "kube-apiserver"))
    stopped.unlink()
    registry.stop_all(timeout=30, last=("kube-apiserver", "etcd"))
    assert stopped.read_text().split() == ["double", "controller", "kube-apiserver", "etcd"]
    assert registry.load() == []


def _until_sigterm(record: Path, name: str) -> list[str]:
    """A process that writes its name to `record` when SIGTERM stops it."""
    return ["/bin/sh", "-c", f"trap 'echo {name} >> {record}; exit 0' TERM; while :; do sleep 0.05; done"]
