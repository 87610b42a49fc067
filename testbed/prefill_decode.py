"""Prefill/decode revisions on the bed: llm-d's simulator as each revision's prefill and decode
servers, and in front of each decode server a routing sidecar that plays llm-d's: a request goes to
one of its revision's prefill servers first (`do_remote_decode`, one token), then with the
`kv_transfer_params` the prefill answered to the decode server, which answers the client.

llm-d's sidecar learns which prefill Pod to use from its endpoint picker's header; the bed has no
endpoint picker (Traefik serves the route), so each sidecar takes its own revision's prefill Pods in
turn. That keeps a revision's prefill and decode together, which is what a rollout must preserve.
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Sequence
from typing import Any

import aiohttp
import yaml
from aiohttp import web

from testbed.fleet import ModelFleet, PodDouble
from testbed.inference_sim import start_simulator
from testbed.loopback_pods import on_loopback_node
from testbed.processes import StartedProcess
from testbed.traefik_gateway import POD_HEADER
from testbed.traffic_driver import CHAT_PATH, require_loopback_url
from testbed.versions import REPO_ROOT

SIDECAR_ENTRY = "testbed.prefill_decode:main"  # started by the fork server (testbed/forkserver.py)
PREFILL_POD_HEADER = "x-prefill-pod"  # the prefill server's Pod, beside the decode Pod's POD_HEADER
EXAMPLE = REPO_ROOT / "examples" / "topologies" / "prefill-decode.yaml"


# -- the routing sidecar ---------------------------------------------------------------------------
def sidecar_app(decode: str, prefills: Sequence[str]) -> web.Application:
    """The sidecar: chat requests through a prefill server (taken in turn) to `decode`."""
    prefill_urls = itertools.cycle([require_loopback_url(url) for url in prefills])
    app = web.Application()

    async def session_context(app: web.Application) -> Any:
        app["session"] = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        yield
        await app["session"].close()

    async def chat(request: web.Request) -> web.Response:
        session: aiohttp.ClientSession = request.app["session"]
        body = await request.json()
        prefill_body = {**body, "kv_transfer_params": {"do_remote_decode": True}, "max_tokens": 1}
        async with session.post(next(prefill_urls) + CHAT_PATH, json=prefill_body) as prefilled:
            if prefilled.status != 200:
                return web.Response(status=prefilled.status, body=await prefilled.read())
            prefill_pod = prefilled.headers.get(POD_HEADER, "")
            params = (await prefilled.json()).get("kv_transfer_params")
        async with session.post(decode + CHAT_PATH, json={**body, "kv_transfer_params": params}) as decoded:
            headers = {POD_HEADER: decoded.headers.get(POD_HEADER, ""), PREFILL_POD_HEADER: prefill_pod}
            return web.Response(
                status=decoded.status,
                body=await decoded.read(),
                headers=headers,
                content_type="application/json",
            )

    async def health(request: web.Request) -> web.Response:
        async with request.app["session"].get(decode + "/health") as answer:
            return web.Response(status=answer.status)

    app.cleanup_ctx.append(session_context)
    app.router.add_post(CHAT_PATH, chat)
    app.router.add_get("/health", health)
    return app


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="llm-d's routing sidecar, as the bed plays it")
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--decode", required=True, help="the decode server's base URL")
    parser.add_argument("--prefill", action="append", required=True, help="a prefill server's base URL")
    args = parser.parse_args(argv)
    web.run_app(sidecar_app(args.decode, args.prefill), host=args.host, port=args.port, print=None)


# -- a revision's servers --------------------------------------------------------------------------
def serve_revision(fleet: ModelFleet, namespace: str, prefill: str, decode: str) -> list[StartedProcess]:
    """Simulates the Pods of the prefill Deployment and of the decode Deployment on their Pod IPs,
    each with its server container's arguments and port; in front of each decode server, a sidecar
    on the port of the Pod's first init container (llm-d's routing proxy: where the decode Service's
    traffic arrives). Returns the sidecars, which the caller stops."""
    prefills = [double.url for double in fleet.simulate(namespace, prefill)]
    args = fleet.container_args(namespace, decode)
    template: Any = fleet.apps.read_namespaced_deployment(decode, namespace).spec.template
    sidecar_port = template.spec.init_containers[0].ports[0].container_port
    sidecars: list[StartedProcess] = []

    def start(namespace: str, deployment: str, pod: str, host: str, port: int) -> PodDouble:
        process = start_simulator(
            fleet.bed.processes, f"sim-{namespace}-{pod}", host, port, args, pod=(namespace, pod)
        )
        sidecar_args = ["--host", host, "--port", str(sidecar_port), "--decode", f"http://{host}:{port}"]
        sidecar_args += [arg for url in prefills for arg in ("--prefill", url)]
        sidecars.append(
            fleet.bed.processes.start_python(f"sidecar-{namespace}-{pod}", SIDECAR_ENTRY, sidecar_args)
        )
        # The decode server's own series and health; clients reach it through the sidecar.
        return PodDouble(namespace, deployment, pod, f"http://{host}:{port}", process, simulated=True)

    fleet.serve_pods(namespace, decode, start, on_pod_ips=True)
    return sidecars


# -- the example, on the bed -----------------------------------------------------------------------
def bed_manifests(namespace: str, prometheus: str) -> list[dict[str, Any]]:
    """examples/topologies/prefill-decode.yaml as the bed applies it: every object in `namespace`,
    the Deployments' Pods on the bed's loopback node (testbed/loopback_pods.py) and the analysis
    reading the bed's Prometheus at `prometheus`. Nothing else is changed."""
    documents = [document for document in yaml.safe_load_all(EXAMPLE.read_text()) if document]
    placed = []
    for document in documents:
        document["metadata"]["namespace"] = namespace
        if document["kind"] == "ModelRollout":
            document["spec"]["analysis"]["prometheus"]["address"] = prometheus
        placed.append(on_loopback_node(document) if document["kind"] == "Deployment" else document)
    return placed
