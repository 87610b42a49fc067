"""An exception injected into one stage of a tick (observe, decide, apply) while the candidate holds
50%: the route must be back at the incumbent within three analysis intervals, the rollout Failed
naming the error, an InternalError Warning, and `modelgate status` saying it was an internal error
(issue 34). `make test` injects into decide (tests/cluster/test_tick_faults.py); `make bench` into
observe and apply (bench/test_tick_faults.py): the fail-safe that follows is the same.

The faults come from tests/support/faulty_operator.py: an operator of the test's own, whose ticks
raise at the stage named in a file the test writes; the session's operator is stopped meanwhile."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client

from modelgate.api import Phase
from modelgate.core import Reason
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.cli import modelgate
from tests.support.faulty_operator import ENTRY, FAULT_FILE_ENV
from tests.support.kube import route_weights
from tests.support.operators import admin_operator_stopped, operator_events, running
from tests.support.scenario import serving

INTERVAL_SECONDS = 2
HALF = {"chat-v1": 50, "chat-v2": 50}
RETURNED = {"chat-v1": 100, "chat-v2": 0}


@pytest.fixture(scope="module")
def fault_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fault") / "stage"


@pytest.fixture(scope="module")
def faulty_operator(
    local_bed: LocalCluster,
    operator: OperatorProcess,
    fault_file: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[OperatorProcess]:
    faulty = OperatorProcess(
        local_bed.kubeconfig,
        tmp_path_factory.mktemp("faulty-operator"),
        entry=ENTRY,
        env={FAULT_FILE_ENV: str(fault_file)},
    )
    with admin_operator_stopped(operator), running(faulty):
        yield faulty


def fault_returns_the_traffic(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    fault_file: Path,
    stage: str,
    record: Callable[[str, object], None],
) -> None:
    """The rollout held at 50% by the faulty operator, then the fault armed at `stage`."""
    fault_file.unlink(missing_ok=True)
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(
            model_rollout(
                "chat",
                namespace,
                steps=[{"setWeight": 50}, {"pause": {}}],
                prometheus=local_bed.prometheus_url,
                metrics=SEED_METRICS,
                interval=f"{INTERVAL_SECONDS}s",
            )
        )
        scenario.wait_for_status(
            "the rollout to hold at 50",
            lambda s: s.phase is Phase.PAUSED and s.live_weight == 50,
            timeout=120,
        )
        assert route_weights(api_client, namespace, "chat") == HALF

        fault_file.write_text(stage)
        armed = time.monotonic()
        try:
            wait_for(
                lambda: route_weights(api_client, namespace, "chat") == RETURNED,
                timeout=3 * INTERVAL_SECONDS,
                interval=0.1,
                what=f"the route back at the incumbent after a fault in {stage}",
            )
            returned_after = time.monotonic() - armed
            failed = scenario.wait_for_status("the rollout to be Failed", lambda s: s.phase is Phase.FAILED)
        finally:
            fault_file.unlink(missing_ok=True)
        record(f"route back at the incumbent after a fault in {stage}, s", round(returned_after, 1))

        error = failed.internal_error
        assert error is not None and error.type == "InjectedFault" and stage in error.message, failed
        assert "InjectedFault" in (failed.message or "") and failed.current_weight == 0
        warnings = [
            event
            for event in operator_events(api_client, namespace).get("chat", [])
            if event["reason"] == Reason.INTERNAL_ERROR.value and event["type"] == "Warning"
        ]
        assert warnings and "InjectedFault" in warnings[0]["note"]
        shown = modelgate(local_bed.kubeconfig, "status", "chat", "-n", namespace)
        assert "Internal error in the operator (a bug): InjectedFault" in shown.stdout, (
            shown.stdout + shown.stderr
        )
