"""`modelgate status -w` into a file tells each change of a whole rollout as it happens (about 35 s,
so in `make bench`; `make test` watches a rollback to its exit code, tests/cluster/test_cli_watch.py)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from kubernetes import client

from modelgate.api import Phase
from modelgate.cli.exit_codes import ExitCode
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.cluster.test_cli_watch import (
    INTERVAL_SECONDS,
    LATENESS_SECONDS,
    lines_as_they_arrive,
    watching_into,
)
from tests.support.scenario import serving

pytestmark = pytest.mark.bench


def test_watching_into_a_file_tells_each_change_as_it_happens(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    manifest = model_rollout(
        "chat",
        namespace,
        # Each step passes on the first analysis an interval after its weight: a change an interval,
        # whenever the watch starts.
        steps=[{"setWeight": 20}, {"setWeight": 40}, {"setWeight": 60}],
        prometheus=local_bed.prometheus_url,
        metrics=SEED_METRICS,
        interval=f"{INTERVAL_SECONDS}s",
    )
    output = tmp_path / "watch.log"
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)
        watch = watching_into(output, operator.kubeconfig, namespace)
        try:
            wait_for(output.read_text, timeout=60, what="the watch's first line (the state at its start)")
            arrivals = lines_as_they_arrive(output, watch, lambda: scenario.status().phase is Phase.SUCCEEDED)
            ended = scenario.status().phase
        finally:
            if watch.poll() is None:
                watch.kill()
            _, errors = watch.communicate()
    assert watch.returncode == ExitCode.OK, errors
    assert ended is Phase.SUCCEEDED
    # The first change (the first analysis, a step) came within an interval of the state at the
    # start, each later one within an interval of the one before, up to the end, and most of them
    # while the rollout ran: not one block at its end.
    ends = next(index for index, arrival in enumerate(arrivals) if "Succeeded" in arrival.line)
    changes = [arrival.at for arrival in arrivals[: ends + 1]]
    gaps = [later - earlier for earlier, later in itertools.pairwise(changes)]
    assert gaps and max(gaps) <= INTERVAL_SECONDS + LATENESS_SECONDS, arrivals
    assert sum(not arrival.ended for arrival in arrivals) >= 3, arrivals
