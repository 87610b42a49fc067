"""A second bed of its own: a supervised component that exits is started again, and `down` stops
exactly what `up` started. Starting that bed and waiting out kube-controller-manager's restart
take about 20 s, hence bench."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from testbed.localcluster import LocalCluster
from testbed.processes import descendants
from testbed.waiting import wait_for

pytestmark = pytest.mark.bench


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
