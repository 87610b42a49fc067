"""Waiting for Traefik to serve what an HTTPRoute says: Traefik applies a route's change a moment
(seconds, on a busy machine) after the API server has it, so a test that counts Traefik's split
starts counting once Traefik's own API shows the route's weights, not after a guessed delay."""

from __future__ import annotations

import time
from collections.abc import Callable

from kubernetes import client

from testbed.fleet import ModelFleet
from testbed.listeners import is_loopback, listening_addresses
from testbed.traefik_gateway import TraefikGateway
from testbed.traffic_driver import Weights
from testbed.waiting import WaitTimeout, wait_for
from tests.support.kube import route_weights


def wait_until_traefik_serves(
    traefik: TraefikGateway,
    api_client: client.ApiClient,
    namespace: str,
    route: str,
    wanted: Callable[[Weights], bool] = lambda _: True,
    *,
    timeout: float = 30,
) -> float:
    """Until every weighted service Traefik built for the route carries the weights the HTTPRoute
    carries, and those are `wanted`; returns the time (time.time()) it was seen so. On timeout, the
    message shows the route's weights and Traefik's last answer."""
    last: dict[str, object] = {}

    def served() -> float | None:
        last["route"] = carried = route_weights(api_client, namespace, route)
        last["traefik"] = serving = traefik.served_weights(namespace, route)
        at = time.time()
        matches = bool(serving) and all(weights == carried for weights in serving)
        return at if matches and wanted(carried) else None

    try:
        what = f"traefik to serve route {namespace}/{route}"
        return wait_for(served, timeout=timeout, interval=0.05, what=what)
    except WaitTimeout as timed_out:
        raise AssertionError(
            f"{timed_out}; the route carries {last.get('route')}, traefik serves {last.get('traefik')}"
        ) from None


def assert_listening_on_loopback_only(fleet: ModelFleet, traefik: TraefikGateway, pods: int) -> None:
    """Each simulator on its Pod's IP and container port (loopback), Traefik on 127.0.0.1: the
    simulator's own command binds every interface, so the bed's must not."""
    pod_addresses = {double.url.removeprefix("http://") for double in fleet.doubles}
    assert len(pod_addresses) == pods
    assert all(address.endswith(":8000") for address in pod_addresses), pod_addresses
    listeners = {
        address
        for process in [traefik.process, *(double.process for double in fleet.doubles)]
        for address in listening_addresses(process.pid)
    }
    assert pod_addresses <= listeners
    assert all(is_loopback(address) for address in listeners), listeners
