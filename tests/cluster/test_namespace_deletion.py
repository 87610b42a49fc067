"""A namespace deleted with rollouts in it (one with a finalizer of ours) is an ending for them: the
namespace goes, and the operator logs no error, no traceback and no tick exception left unread
("Future exception was never retrieved")."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

from kubernetes import client

from testbed.localcluster import LocalCluster
from testbed.manifests import model_rollout
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.kube import create, create_model_routes, rollout_status
from tests.support.operators import admin_operator_stopped, running

# The rollouts hold at their first step: their ticks run on while the namespace goes.
HOLD: list[dict[str, Any]] = [{"setWeight": 50}, {"pause": {}}]
ROLLOUTS = ("kept", "returned")
RETURN = {"onDelete": "ReturnTraffic"}  # a finalizer of ours: its deletion ticks in the going namespace


def _gone(core: client.CoreV1Api, namespace: str) -> bool:
    return not core.list_namespace(field_selector=f"metadata.name={namespace}").items


def test_rollouts_of_a_deleted_namespace_end_without_an_error(
    local_bed: LocalCluster, api_client: client.ApiClient, operator: OperatorProcess, tmp_path: Path
) -> None:
    core = client.CoreV1Api(api_client)
    namespace = f"t-{uuid.uuid4().hex[:10]}"
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
    own = OperatorProcess(local_bed.kubeconfig, tmp_path / "operator", [namespace])
    try:
        create_model_routes(api_client, namespace, list(ROLLOUTS))
        with admin_operator_stopped(operator), running(own):
            create(api_client, model_rollout("kept", namespace, steps=HOLD, route="kept"))
            returned = {"onDelete": "ReturnTraffic"}
            create(
                api_client,
                model_rollout("returned", namespace, steps=HOLD, route="returned", rollback=returned),
            )
            for name in ROLLOUTS:
                wait_for(
                    lambda name=name: rollout_status(api_client, namespace, name).current_weight == 50,
                    timeout=60,
                    what=f"rollout {name} at its first step",
                )
            core.delete_namespace(namespace)
            wait_for(lambda: _gone(core, namespace), timeout=120, what=f"namespace {namespace} to be gone")
            wait_for(lambda: _no_ticks_for(own, 3), timeout=60, what="the operator to tick nothing for 3 s")
    finally:
        if not _gone(core, namespace):
            core.delete_namespace(namespace)
    records = own.log_records()
    assert [record for record in records if record.get("level") == "error" or "exception" in record] == []
    assert "never retrieved" not in own.logs()


def _no_ticks_for(operator: OperatorProcess, seconds: float) -> bool:
    before = operator.counter("modelgate_reconcile_duration_seconds_count")
    time.sleep(seconds)
    return operator.counter("modelgate_reconcile_duration_seconds_count") == before
