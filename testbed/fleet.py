"""Model servers standing in for the Pods of model Deployments.

The bed's fake nodes (kwok) run no containers, so for each Ready Pod of a Deployment the fleet
starts one server process on 127.0.0.1 (or on the Pod's loopback IP) and registers it with the bed's
Prometheus under the labels Kubernetes discovery would give that Pod (`namespace`, `pod`,
`container`). Pod names are the real ones the ReplicaSet controller chose, so queries select series
exactly as they would in a cluster. The server is llm-d's vLLM simulator (`simulate`,
testbed/inference_sim.py) or our double (`serve`, testbed/model_server_double.py) for what the
simulator cannot do: refusal text, exemplars, per-request traces, behaviour changed mid-test.
The servers are recorded with the bed's processes: `make cluster-down` stops them too.
"""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from modelgate.kube.workload_status import LWS_GROUP, lws_leader_selector
from testbed.inference_sim import SimulatorFlags, start_simulator
from testbed.localcluster import LocalCluster
from testbed.model_server_double import DOUBLE_ENTRY, Behaviour
from testbed.ports import free_port
from testbed.processes import StartedProcess
from testbed.waiting import wait_for


@dataclass(frozen=True)
class PodDouble:
    namespace: str
    deployment: str
    pod: str
    url: str
    process: StartedProcess
    simulated: bool = False  # llm-d's simulator, not our double

    @property
    def target_name(self) -> str:
        return f"{self.namespace}.{self.pod}"

    def healthy(self) -> bool:
        path = "/health" if self.simulated else "/healthz"
        with urllib.request.urlopen(f"{self.url}{path}", timeout=2) as response:
            return bool(response.status == 200)


# Starts a Pod's server: (namespace, deployment, pod, host, port) -> the server.
Starter = Callable[[str, str, str, str, int], PodDouble]


class ModelFleet:
    def __init__(
        self, bed: LocalCluster, api_client: client.ApiClient, *, refusal_counters: bool = True
    ) -> None:
        """`refusal_counters`: whether the doubles count refusals as the refusal sidecar would."""
        self.bed = bed
        self.refusal_counters = refusal_counters
        self.core = client.CoreV1Api(api_client)
        self.apps = client.AppsV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.doubles: list[PodDouble] = []

    def serve(
        self,
        namespace: str,
        deployment: str,
        behaviour: Behaviour | None = None,
        *,
        on_pod_ips: bool = False,
    ) -> list[PodDouble]:
        """Starts a double for every Ready Pod of the Deployment (waiting until all replicas are): on
        a free port of 127.0.0.1, or with `on_pod_ips` on the Pod's own IP and container port, where
        a gateway reaching the Pod through its Service finds it (Pods of the loopback node,
        testbed/loopback_pods.py)."""
        started = self.serve_pods(namespace, deployment, self._start_double, on_pod_ips)
        self.set_behaviour(deployment, behaviour or Behaviour())
        return started

    def simulate(
        self, namespace: str, deployment: str, flags: SimulatorFlags | None = None, *, on_pod_ips: bool = True
    ) -> list[PodDouble]:
        """Starts llm-d's vLLM simulator for every Ready Pod of the Deployment, as `serve` starts
        doubles: with `flags`, or without, with the arguments of the Pod's container. By default on
        the Pods' own IPs, for a gateway to reach."""
        args = flags.args(deployment) if flags is not None else self.container_args(namespace, deployment)
        return self.serve_pods(namespace, deployment, self._simulator(args), on_pod_ips)

    def simulate_leaders(
        self, namespace: str, lws: str, flags: SimulatorFlags | None = None
    ) -> list[PodDouble]:
        """Starts llm-d's simulator for each leader Pod of the LeaderWorkerSet (worker 0 of each
        group: the leader serves; its workers are Pods that serve nothing), on the Pods' own IPs,
        once every group's leader is Ready: with `flags`, or the leader container's arguments."""

        def read() -> dict[str, Any]:
            found: Any = self.custom.get_namespaced_custom_object(
                LWS_GROUP, "v1", namespace, "leaderworkersets", lws
            )
            return dict(found)

        def leaders() -> list[Any] | None:
            return self._ready(namespace, lws_leader_selector(lws), read()["spec"]["replicas"])

        what = f"the leader Pods of LeaderWorkerSet {namespace}/{lws} to be Ready"
        args = flags.args(lws) if flags is not None else leader_template_args(read())
        return self.serve_pods(namespace, lws, self._simulator(args), True, (leaders, what))

    def _simulator(self, args: list[str]) -> Starter:
        def start(namespace: str, deployment: str, pod: str, host: str, port: int) -> PodDouble:
            process = start_simulator(
                self.bed.processes, f"sim-{namespace}-{pod}", host, port, args, pod=(namespace, pod)
            )
            return PodDouble(namespace, deployment, pod, f"http://{host}:{port}", process, simulated=True)

        return start

    def serve_pods(
        self,
        namespace: str,
        deployment: str,
        start: Starter,
        on_pod_ips: bool,
        ready: tuple[Callable[[], list[Any] | None], str] | None = None,
    ) -> list[PodDouble]:
        """`ready`: which Pods to serve (None until they are all Ready) and what they are, when not
        the Deployment's."""
        ready = ready or (
            lambda: self._ready_pods(namespace, deployment),
            f"the Pods of deployment {namespace}/{deployment} to be Ready",
        )
        pods = wait_for(ready[0], timeout=60, what=ready[1])
        addresses = [_pod_address(pod) if on_pod_ips else ("127.0.0.1", free_port()) for pod in pods]
        started = [
            start(namespace, deployment, pod.metadata.name, host, port)
            for pod, (host, port) in zip(pods, addresses, strict=True)
        ]
        self.doubles.extend(started)
        for double in started:  # all started first, then waited for
            wait_for(double.healthy, timeout=30, what=f"the server for pod {double.pod}")
        for double in started:
            self.bed.scrape_targets.add(
                double.target_name,
                double.url.removeprefix("http://"),
                {"namespace": namespace, "pod": double.pod, "container": "server", "deployment": deployment},
            )
        return started

    def urls(self, deployment: str) -> list[str]:
        return [d.url for d in self.doubles if d.deployment == deployment]

    def set_behaviour(self, deployment: str, behaviour: Behaviour, *, pod: str | None = None) -> None:
        """Every double of the Deployment, or with `pod` that Pod's alone, behaves so from now on."""
        body = json.dumps(behaviour.model_dump(mode="json")).encode()
        for double in self.doubles:
            if double.deployment != deployment or pod not in (None, double.pod):
                continue
            if double.simulated:
                raise ValueError(f"pod {double.pod} runs the simulator, whose flags are set at its start")
            request = urllib.request.Request(f"{double.url}/admin/behaviour", data=body, method="PUT")
            request.add_header("Content-Type", "application/json")
            with urllib.request.urlopen(request, timeout=5) as response:
                response.read()

    def served(self, pod: str) -> list[tuple[str, int]]:
        """(trace ID, HTTP status) of the latest requests the Pod's double served, oldest first."""
        double = next(d for d in self.doubles if d.pod == pod)
        with urllib.request.urlopen(f"{double.url}/admin/traces", timeout=5) as response:
            return [(served["traceId"], served["status"]) for served in json.load(response)]

    def stop(self) -> None:
        for double in self.doubles:
            self.bed.scrape_targets.remove(double.target_name)
            self.bed.processes.stop(double.process)
        self.doubles.clear()

    def container_args(self, namespace: str, deployment: str) -> list[str]:
        """The server container's arguments, but its `--port`: the bed starts each server on the
        port it gives the Pod (the container's, on its Pod IP; or a free one on 127.0.0.1)."""
        spec: Any = self.apps.read_namespaced_deployment(deployment, namespace).spec
        return [arg for arg in spec.template.spec.containers[0].args or [] if not arg.startswith("--port")]

    def _ready_pods(self, namespace: str, deployment: str) -> list[Any] | None:
        spec: Any = self.apps.read_namespaced_deployment(deployment, namespace).spec
        selector = ",".join(f"{k}={v}" for k, v in spec.selector.match_labels.items())
        return self._ready(namespace, selector, spec.replicas)

    def _ready(self, namespace: str, selector: str, wanted: int) -> list[Any] | None:
        """The selected Pods, by name, once exactly `wanted` of them are Ready."""
        pods: list[Any] = self.core.list_namespaced_pod(namespace, label_selector=selector).items
        ready = [p for p in pods if p.metadata.deletion_timestamp is None and pod_is_ready(p)]
        return sorted(ready, key=lambda p: p.metadata.name) if len(ready) == wanted else None

    def _start_double(self, namespace: str, deployment: str, pod: str, host: str, port: int) -> PodDouble:
        process = self.bed.processes.start_python(
            f"double-{namespace}-{pod}",
            DOUBLE_ENTRY,
            ["--host", host, "--port", str(port), "--model-name", deployment, "--namespace", namespace]
            + ([] if self.refusal_counters else ["--no-refusal-counters"]),
        )
        return PodDouble(namespace, deployment, pod, f"http://{host}:{port}", process)


def leader_template_args(lws: dict[str, Any]) -> list[str]:
    """The arguments of a LeaderWorkerSet's leader (serving) container."""
    [server, *_] = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"]
    return list(server.get("args") or [])


def pod_is_ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def _pod_address(pod: Any) -> tuple[str, int]:
    """The Pod's IP and its first container's first port: where its Service's traffic arrives."""
    return pod.status.pod_ip, pod.spec.containers[0].ports[0].container_port
