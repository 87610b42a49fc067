"""Waiting for Traefik to serve what an HTTPRoute says: Traefik applies a route's change a moment
(seconds, on a busy machine) after the API server has it, so a test that counts Traefik's split
starts counting once Traefik's own API shows the route's weights, not after a guessed delay."""

from __future__ import annotations

import time
from collections.abc import Callable

from kubernetes import client

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
