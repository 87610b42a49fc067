"""The bed's processes bind to loopback only, a supervised one that exits is started again, and
`down` stops exactly what `up` started."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from testbed.listeners import is_loopback, listening_addresses
from testbed.localcluster import LocalCluster
from testbed.processes import descendants
from testbed.waiting import wait_for


def test_every_bed_process_listens_on_loopback_only(local_bed: LocalCluster) -> None:
    started = local_bed.processes.load()
    assert {p.name for p in started} >= {
        "etcd",
        "kube-apiserver",
        "kube-controller-manager",
        "kube-scheduler",
        "kwok",
        "prometheus",
    }
    for process in started:
        addresses = listening_addresses(process.pid)
        assert addresses, f"{process.name} listens on nothing"
        assert all(is_loopback(a) for a in addresses), f"{process.name} listens on {addresses}"


def test_a_component_that_exits_comes_back_and_down_stops_everything(
    tmp_path: Path, local_bed: LocalCluster
) -> None:
    """As a node's kubelet does, the bed starts kube-controller-manager again when it exits (it does
    when it loses its leader lease); `down` stops it with its supervisor."""
    bed = LocalCluster(tmp_path / "second-bed")
    bed.up()
    started = bed.processes.load()
    assert all(bed.processes.is_running(p) for p in started)
    supervisor = next(p for p in started if p.name == "kube-controller-manager")
    [first] = descendants(supervisor.pid)
    os.kill(first, signal.SIGKILL)
    again = wait_for(
        lambda: [pid for pid in descendants(supervisor.pid) if pid != first],
        timeout=30,
        what="kube-controller-manager started again",
    )
    bed.await_controller_manager()
    bed.down()
    assert not any(bed.processes.is_running(p) for p in started)
    assert not any(Path(f"/proc/{pid}").exists() for pid in again)
    assert bed.processes.load() == []
    # The session's own bed is untouched by stopping another one.
    assert local_bed.is_up()


def test_up_refuses_a_folder_that_holds_something_else(tmp_path: Path) -> None:
    precious = tmp_path / "notes.txt"
    precious.write_text("not a bed")
    with pytest.raises(RuntimeError, match="holds no bed"):
        LocalCluster(tmp_path).up()
    assert precious.read_text() == "not a bed"
