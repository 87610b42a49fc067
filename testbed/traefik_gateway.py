"""A real Gateway API data plane for the bed: Traefik's Kubernetes Gateway provider, run outside the
cluster against the bed's API server (hack/build-bins.sh builds it into the cache).

Traefik is the controller of one GatewayClass (`modelgate-bed`). A test's Gateway has one HTTP
listener on Traefik's `web` entrypoint (Traefik pairs a listener with the entrypoint of its port);
Traefik then serves the HTTPRoutes attached to it with the routes' backend weights, reaching the
Services' Pods through their EndpointSlices (testbed/loopback_pods.py). Every listener, the
entrypoint and Traefik's own ping and metrics, is on 127.0.0.1.
"""

from __future__ import annotations

import json
import re
import urllib.parse
import urllib.request
from collections import Counter
from dataclasses import dataclass
from typing import Any

import yaml

from testbed.binaries import binary
from testbed.components import LOOPBACK
from testbed.localcluster import LocalCluster
from testbed.manifests import GATEWAY_GROUP, GATEWAY_VERSION, Manifest
from testbed.ports import free_port
from testbed.processes import StartedProcess
from testbed.traffic_driver import CHAT_PATH, CHAT_REQUEST, Weights
from testbed.waiting import wait_for

CONTROLLER_NAME = "traefik.io/gateway-controller"
GATEWAY_CLASS = "modelgate-bed"
WEB_ENTRYPOINT = "web"
ADMIN_ENTRYPOINT = "traefik"  # ping, Prometheus metrics and the read-only API (its default entrypoint)
STARTUP_TIMEOUT = 60.0
# Traefik waits 10 s for open connections when stopped; a test's bed has none worth waiting for.
NO_GRACE = {"lifeCycle": {"graceTimeOut": "0s"}}


def static_config(web_port: int, admin_port: int) -> dict[str, Any]:
    """Traefik's static configuration: the two entrypoints and the Gateway provider. Where the API
    server is comes from KUBECONFIG in Traefik's environment."""
    return {
        "global": {"checkNewVersion": False, "sendAnonymousUsage": False},
        "entryPoints": {
            WEB_ENTRYPOINT: {"address": f"{LOOPBACK}:{web_port}", "transport": NO_GRACE},
            ADMIN_ENTRYPOINT: {"address": f"{LOOPBACK}:{admin_port}", "transport": NO_GRACE},
        },
        "ping": {"entryPoint": ADMIN_ENTRYPOINT},
        # What Traefik serves, read by tests that wait for a route's weights to be served.
        "api": {"insecure": True, "dashboard": False},
        "metrics": {"prometheus": {"entryPoint": ADMIN_ENTRYPOINT, "addServicesLabels": True}},
        "providers": {"kubernetesGateway": {"statusAddress": {"ip": LOOPBACK}}},
        "log": {"level": "INFO", "noColor": True},
    }


def gateway_class() -> Manifest:
    return {
        "apiVersion": f"{GATEWAY_GROUP}/{GATEWAY_VERSION}",
        "kind": "GatewayClass",
        "metadata": {"name": GATEWAY_CLASS},
        "spec": {"controllerName": CONTROLLER_NAME},
    }


def gateway(name: str, namespace: str, port: int) -> Manifest:
    """A Gateway whose one HTTP listener is Traefik's web entrypoint, for routes of its namespace."""
    return {
        "apiVersion": f"{GATEWAY_GROUP}/{GATEWAY_VERSION}",
        "kind": "Gateway",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "gatewayClassName": GATEWAY_CLASS,
            "listeners": [
                {
                    "name": "http",
                    "protocol": "HTTP",
                    "port": port,
                    "allowedRoutes": {"namespaces": {"from": "Same"}},
                }
            ],
        },
    }


@dataclass
class TraefikGateway:
    """Traefik as one of the bed's processes (`make cluster-down` stops it too)."""

    bed: LocalCluster
    web_port: int
    admin_port: int
    process: StartedProcess

    @classmethod
    def start(cls, bed: LocalCluster) -> TraefikGateway:
        web_port, admin_port = free_port(), free_port()
        config_dir = bed.layout.root / "traefik"
        config_dir.mkdir(exist_ok=True)
        config_file = config_dir / "traefik.yml"
        config_file.write_text(yaml.safe_dump(static_config(web_port, admin_port), sort_keys=False))
        process = bed.processes.start(
            "traefik",
            [str(binary("traefik")), f"--configFile={config_file}"],
            env={"KUBECONFIG": str(bed.kubeconfig)},
        )
        started = cls(bed, web_port, admin_port, process)
        wait_for(started._pings, timeout=STARTUP_TIMEOUT, what=f"traefik's ping (log: {process.log_file})")
        bed.scrape_targets.add("traefik", f"{LOOPBACK}:{admin_port}", {"job": "traefik"})
        return started

    @property
    def url(self) -> str:
        """Where clients send requests: the web entrypoint."""
        return f"http://{LOOPBACK}:{self.web_port}"

    def stop(self) -> None:
        self.bed.scrape_targets.remove("traefik")
        self.bed.processes.stop(self.process)

    def served_weights(self, namespace: str, route: str) -> list[Weights]:
        """The backend weights Traefik serves for HTTPRoute `namespace/route`: one per weighted
        service it built for the route (one per rule and match), from its API."""
        query = urllib.parse.urlencode({"search": f"httproute-{namespace}-{route}-gw-", "per_page": 1000})
        url = f"http://{LOOPBACK}:{self.admin_port}/api/http/services?{query}"
        with urllib.request.urlopen(url, timeout=2) as response:
            return route_weights_served(json.load(response), namespace, route)

    def _pings(self) -> bool:
        with urllib.request.urlopen(f"http://{LOOPBACK}:{self.admin_port}/ping", timeout=2) as response:
            return bool(response.status == 200)


def route_weights_served(services: list[dict[str, Any]], namespace: str, route: str) -> list[Weights]:
    """From Traefik's /api/http/services: the weights of each weighted service Traefik's Gateway
    provider built for the route (named after the router, `httproute-<namespace>-<route>-gw-...-wrr`),
    by backend (each child is named `<router>-svc-<namespace>-<backend>-<index>`)."""
    router = re.compile(rf"httproute-{re.escape(namespace)}-{re.escape(route)}-gw-.+-wrr@kubernetesgateway")
    child = re.compile(rf".+-svc-{re.escape(namespace)}-(?P<backend>.+)-\d+")
    served = []
    for service in services:
        if not router.fullmatch(service.get("name", "")):
            continue
        weights: Weights = {}
        for backend in service.get("weighted", {}).get("services", []):
            named = child.fullmatch(backend["name"])
            name = named["backend"] if named else backend["name"]
            weights[name] = weights.get(name, 0) + backend.get("weight", 1)
        served.append(weights)
    return served


POD_HEADER = "x-inference-pod"  # the Pod that answered, as llm-d's simulator names it


def answers_by_model(url: str, requests: int) -> Counter[str]:
    """Which Deployment's Pod answered each of `requests` chat requests sent one after another to
    `url`: its name is the Pod's, less the ReplicaSet's and the Pod's suffixes."""
    return Counter(pod.rsplit("-", 2)[0] for pod in answers_by_pod(url, requests).elements())


def answers_by_pod(url: str, requests: int) -> Counter[str]:
    """Which Pod answered each of `requests` chat requests sent one after another to `url`."""
    answered: Counter[str] = Counter()
    body = json.dumps(CHAT_REQUEST).encode()
    for _ in range(requests):
        request = urllib.request.Request(f"{url}{CHAT_PATH}", data=body, method="POST")
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as response:
            answered[response.headers[POD_HEADER]] += 1
    return answered


def wait_until_served_by(url: str, model: str, timeout: float = 60) -> None:
    """Until every request sent to the gateway at `url` is answered by `model`: Traefik loads a
    route a moment after the API server has it."""
    wait_for(
        lambda: answers_by_model(url, 5) == Counter({model: 5}),
        timeout=timeout,
        what=f"the gateway at {url} to send {model} every request",
    )
