"""The bed's processes bind to loopback only, and `up` leaves alone a folder that is not a bed's.
(A supervised component that exits is started again: bench/test_bed_supervision.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.listeners import is_loopback, listening_addresses
from testbed.localcluster import LocalCluster


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


def test_up_refuses_a_folder_that_holds_something_else(tmp_path: Path) -> None:
    precious = tmp_path / "notes.txt"
    precious.write_text("not a bed")
    with pytest.raises(RuntimeError, match="holds no bed"):
        LocalCluster(tmp_path).up()
    assert precious.read_text() == "not a bed"
