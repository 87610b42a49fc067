"""The chart's RBAC for the scopes `make test` does not run a rollout with (it runs cluster scope with
peering): cluster scope alone, and namespaces scope, each taking a rollout to Succeeded as the chart's
ServiceAccount with no permission error."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes import client

from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from tests.cluster.test_rbac_least_privilege import (  # noqa: F401
    new_namespace,
    rollout_as_the_charts_service_account,
)

pytestmark = pytest.mark.bench


@pytest.mark.parametrize("scope", ["cluster", "namespaces"])
def test_operator_completes_a_rollout_as_the_charts_service_account(
    scope: str,
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    new_namespace: Callable[[], str],  # noqa: F811
    operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    rollout_as_the_charts_service_account(
        scope, False, local_bed, api_client, namespace, new_namespace(), operator, tmp_path
    )
