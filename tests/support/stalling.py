"""One tenant stalling the others: rollouts whose Prometheus accepts connections and never answers
(testbed/silent_server.py), each in a namespace of its own, beside an ordinary rollout whose
candidate starts failing. Used by tests/cluster/test_no_tenant_stalls.py and bench/test_stalled_tenants.py."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import Phase
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.silent_server import SilentServer
from testbed.waiting import wait_for
from tests.support.kube import create, create_model_routes, rollout_status, scratch_namespace
from tests.support.operators import admin_operator_stopped
from tests.support.scenario import Scenario, serving

ORDINARY_STEPS = [{"setWeight": 20}, {"pause": {}}]
BREACH = Behaviour(error_rate=0.5)


def hostile_rollout(namespace: str, prometheus: str) -> dict[str, object]:
    """The worst a tenant may write: the longest timeout, the shortest interval, and errors that
    never pause the analysis."""
    manifest = model_rollout(
        "hostile",
        namespace,
        steps=[{"setWeight": 10}, {"pause": {}}],
        prometheus=prometheus,
        metrics=SEED_METRICS,
        interval="1s",
        rollback={"onPrometheusError": "pause", "maxConsecutiveErrors": 1000000},
    )
    manifest["spec"]["analysis"]["prometheus"]["timeout"] = "60s"
    return manifest


@contextmanager
def hostile_namespaces(api_client: client.ApiClient, count: int) -> Iterator[list[str]]:
    """Scratch namespaces whose hostile rollouts are gone before the namespaces go: an operator
    started meanwhile would otherwise tick them while their namespaces are being deleted."""
    with ExitStack() as stack:
        namespaces = [stack.enter_context(scratch_namespace(api_client)) for _ in range(count)]
        try:
            yield namespaces
        finally:
            _delete_hostile(api_client, namespaces)


def _delete_hostile(api_client: client.ApiClient, namespaces: list[str]) -> None:
    custom = client.CustomObjectsApi(api_client)
    for namespace in namespaces:
        with contextlib.suppress(ApiException):  # never created
            custom.delete_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, "hostile")

    def gone() -> bool:
        listed = (
            custom.list_namespaced_custom_object(API_GROUP, API_VERSION, ns, PLURAL) for ns in namespaces
        )
        return not any(page["items"] for page in listed)

    wait_for(gone, timeout=30, interval=0.2, what="the hostile rollouts to be deleted")


def start_hostile(
    api_client: client.ApiClient, namespaces: list[str], silent_address: str, prometheus: str
) -> None:
    """Their rollouts, and the Deployments and route they need to reach their analysis. Each starts
    on the bed's `prometheus` (a rollout whose queries never answered gets no weight, so it would
    hang before its first) and, once every one has moved its weight, is pointed at the silent
    server: each next tick hangs there, on the check of the edited analysis."""
    for namespace in namespaces:
        create_model_routes(api_client, namespace, ["chat"])
        create(api_client, hostile_rollout(namespace, prometheus))
    wait_for(
        lambda: all(rollout_status(api_client, ns, "hostile").current_weight == 10 for ns in namespaces),
        timeout=60,
        what="every hostile rollout at weight 10",
    )
    silent = {"spec": {"analysis": {"prometheus": {"address": silent_address}}}}
    for namespace in namespaces:
        client.CustomObjectsApi(api_client).patch_namespaced_custom_object(
            API_GROUP, API_VERSION, namespace, PLURAL, "hostile", silent
        )


@contextmanager
def ordinary_rollout(bed: LocalCluster, api_client: client.ApiClient, namespace: str) -> Iterator[Scenario]:
    """A healthy candidate at weight 20, its analysis passing, until `breach_to_zero`."""
    with serving(bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(
            model_rollout(
                "chat",
                namespace,
                steps=ORDINARY_STEPS,
                prometheus=bed.prometheus_url,
                metrics=SEED_METRICS,
                interval="1s",
            )
        )
        scenario.wait_for_status(
            "weight 20", lambda s: s.current_weight == 20 and s.phase is Phase.PROGRESSING
        )
        yield scenario


def breach_to_zero(scenario: Scenario, timeout: float = 120) -> float:
    """Seconds from the candidate starting to fail to the route showing it weight 0."""
    breached_at = time.time()
    scenario.fleet.set_behaviour("chat-v2", BREACH)
    zero_at = wait_for(
        lambda: scenario.recorder.first_time_at(0, after=breached_at), timeout=timeout, what="the route at 0"
    )
    return zero_at - breached_at


def own_operator(bed: LocalCluster, state: Path, namespaces: list[str], workers: int) -> OperatorProcess:
    return OperatorProcess(bed.kubeconfig, state, namespaces=namespaces, extra_args=[f"--workers={workers}"])


@dataclass(frozen=True)
class StalledTenants:
    """An operator of the test's own over `namespaces` (the ordinary one first, then the hostile
    ones), and the server that never answers their Prometheus queries."""

    operator: OperatorProcess
    hostile: list[str]
    silent: SilentServer


@contextmanager
def stalled_tenants(
    bed: LocalCluster,
    api_client: client.ApiClient,
    session_operator: OperatorProcess,
    namespace: str,
    state: Path,
    *,
    hostile: int,
    workers: int,
) -> Iterator[StalledTenants]:
    """With the session's operator stopped: `hostile` namespaces, a silent server, and an operator
    of `workers` threads over them and `namespace` (not started). The session's operator comes back
    last, once the silent server is gone and the hostile rollouts are deleted: it would otherwise
    pick up those rollouts and hang on the server too."""
    with (
        admin_operator_stopped(session_operator),
        hostile_namespaces(api_client, hostile) as namespaces,
        SilentServer.in_process() as silent,
    ):
        yield StalledTenants(own_operator(bed, state, [namespace, *namespaces], workers), namespaces, silent)
