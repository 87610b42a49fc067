"""A real Kubernetes control plane and Prometheus as plain processes on 127.0.0.1: etcd,
kube-apiserver, kube-controller-manager, kube-scheduler, kwok with fake nodes, and Prometheus.

`python -m testbed.localcluster up|down|status` (what `make cluster-up` runs) and the
pytest fixtures both use `LocalCluster`."""

from __future__ import annotations

import functools
import json
import os
import shutil
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import structlog

from testbed import components
from testbed.bed_prometheus import ScrapeTargets, write_config
from testbed.binaries import binary
from testbed.components import LOOPBACK, Layout, Ports
from testbed.crds import install_crds
from testbed.kubeconfig import write_kubeconfig
from testbed.kwok_stages import write_stages
from testbed.pki import LocalPKI
from testbed.ports import free_port
from testbed.processes import ProcessRegistry, python_module_env
from testbed.versions import pinned_versions
from testbed.waiting import wait_for

log = structlog.get_logger(__name__)

FAKE_NODES = ("kwok-node-0", "kwok-node-1")
# Set (to anything but "" or "0") to have kube-apiserver serve Go's profiler at /debug/pprof, e.g.
# `curl --cert pki/admin.crt ... /debug/pprof/profile?seconds=30` (bench/apiserver_writes.py does).
API_SERVER_PROFILING_ENV = "MODELGATE_BED_APISERVER_PROFILING"
# The bed's Go programs collect garbage at 5x their live heap, not 2x: the API server spent a
# sixth of its CPU in the collector, and the suite is CPU-bound on 2 cores while memory is ample
# (its CPU over the same four test files: 21.4 s against 24.4 s; docs/testing.md).
GO_COMPONENT_ENV = {"GOGC": "400"}
STARTUP_TIMEOUT = 90.0
ArgvBuilder = Callable[[Path, Layout, Ports], list[str]]


@contextmanager
def _timed(step: str) -> Iterator[None]:
    start = time.monotonic()
    yield
    log.info("bed step done", step=step, seconds=round(time.monotonic() - start, 1))


class LocalCluster:
    def __init__(self, root: Path) -> None:
        self.layout = Layout(root.resolve())
        self.processes = ProcessRegistry(self.layout.root)
        self._state_file = self.layout.root / "bed.json"
        self.ports = self._load_ports()

    def _load_ports(self) -> Ports | None:
        if not self._state_file.exists():
            return None
        return Ports(**json.loads(self._state_file.read_text()))

    @property
    def kubeconfig(self) -> Path:
        return self.layout.kubeconfig

    @property
    def api_server_url(self) -> str:
        return f"https://{LOOPBACK}:{self._ports.apiserver}"

    @property
    def prometheus_url(self) -> str:
        return f"http://{LOOPBACK}:{self._ports.prometheus}"

    @property
    def scrape_targets(self) -> ScrapeTargets:
        return ScrapeTargets(self.layout.prometheus)

    @property
    def _ports(self) -> Ports:
        if self.ports is None:
            raise RuntimeError(f"no bed in {self.layout.root}: run `make cluster-up`")
        return self.ports

    def is_up(self) -> bool:
        started = self.processes.load()
        return bool(started) and all(self.processes.is_running(p) for p in started)

    def up(self) -> None:
        if self.processes.load():
            raise RuntimeError(
                f"a bed is already recorded in {self.layout.root}; run `make cluster-down` first"
            )
        root = self.layout.root
        if root.is_dir() and any(root.iterdir()) and not self._state_file.exists():
            # Only a previous bed's state is wiped: never a folder someone named by mistake.
            raise RuntimeError(f"{root} is not empty and holds no bed (no bed.json): choose another --root")
        total = time.monotonic()
        shutil.rmtree(root, ignore_errors=True)
        self.layout.root.mkdir(parents=True)
        self.ports = Ports(*(free_port() for _ in Ports.__dataclass_fields__))
        self._state_file.write_text(json.dumps(asdict(self.ports)))
        try:
            with _timed("certificates and kubeconfigs"):
                self._write_pki()
            self._start_control_plane()
            with _timed("fake nodes and CRDs"):
                self.install_crds(also=self._fake_nodes())
                self._wait_for_nodes_ready()
                self._wait_for_default_service_account()
            self.start_prometheus()
        except BaseException:
            log.error("bed failed to start; stopping what was started", logs=str(self.layout.root / "logs"))
            self.down()
            raise
        log.info("bed is up", seconds=round(time.monotonic() - total, 1), kubeconfig=str(self.kubeconfig))

    def down(self) -> None:
        # The API server's clients first, even where a test restarted the API server after them: a
        # controller that has lost its API server waits out its timeouts before exiting (14 s).
        self.processes.stop_all(last=("kube-apiserver", "etcd"))
        log.info("bed is down", root=str(self.layout.root))

    def _write_pki(self) -> None:
        pki = LocalPKI(self.layout.pki)
        pki.issue(
            "apiserver", common_name="kube-apiserver", server_hosts=(LOOPBACK, "localhost", "kubernetes")
        )
        pki.service_account_keys()
        users = {
            "admin": ("modelgate-admin", "system:masters"),
            "controller-manager": ("system:kube-controller-manager", None),
            "scheduler": ("system:kube-scheduler", None),
            # kwok acts for the fake nodes' kubelets; system:masters keeps the bed simple.
            "kwok": ("kwok-controller", "system:masters"),
        }
        for name, (user, group) in users.items():
            pair = pki.issue(name, common_name=user, organization=group)
            path = self.kubeconfig if name == "admin" else self.layout.component_kubeconfig(name)
            write_kubeconfig(path, server=self.api_server_url, ca_cert=pki.ca.cert, user=user, client=pair)

    def _start(self, name: str, program: str, argv: ArgvBuilder) -> None:
        self.processes.start(name, argv(binary(program), self.layout, self._ports), env=GO_COMPONENT_ENV)

    def _start_supervised(self, name: str, program: str, argv: ArgvBuilder) -> None:
        """Started again whenever it exits, as a node's kubelet does (testbed.supervisor)."""
        supervised = [
            sys.executable,
            "-m",
            "testbed.supervisor",
            "--",
            *argv(binary(program), self.layout, self._ports),
        ]
        self.processes.start(name, supervised, env={**python_module_env(), **GO_COMPONENT_ENV})

    def _start_control_plane(self) -> None:
        with _timed("etcd"):
            self._start("etcd", "etcd", components.etcd_argv)
            self._await_http(f"http://{LOOPBACK}:{self._ports.etcd_client}/health", "etcd")
        self._start_api_server()
        with _timed("controller-manager, scheduler, kwok"):
            self._start_supervised(
                "kube-controller-manager", "kube-controller-manager", components.controller_manager_argv
            )
            self._start_supervised("kube-scheduler", "kube-scheduler", components.scheduler_argv)
            write_stages(self.layout.kwok_stages, pinned_versions()["KWOK_VERSION"])
            self._start("kwok", "kwok", components.kwok_argv)
            self.await_controller_manager()
            self._await_http(f"https://{LOOPBACK}:{self._ports.scheduler}/healthz", "kube-scheduler")
            self._await_http(f"http://{LOOPBACK}:{self._ports.kwok}/healthz", "kwok")

    def _start_api_server(self) -> None:
        with _timed("kube-apiserver"):
            profiling = os.environ.get(API_SERVER_PROFILING_ENV, "") not in ("", "0")
            argv = functools.partial(components.apiserver_argv, profiling=profiling)
            self._start("kube-apiserver", "kube-apiserver", argv)
            self._await_http(f"{self.api_server_url}/readyz", "kube-apiserver", client="admin")

    def await_controller_manager(self) -> None:
        self._await_http(
            f"https://{LOOPBACK}:{self._ports.controller_manager}/healthz", "kube-controller-manager"
        )

    def kill_component(self, name: str) -> None:
        """SIGKILLs a component (no graceful shutdown, as when its machine dies)."""
        for process in self.processes.load():
            if process.name == name:
                self.processes.kill(process)

    def start_api_server(self) -> None:
        """Starts kube-apiserver again on its port, after a test stopped or killed it; etcd kept the
        state. Returns once it is ready."""
        self._start_api_server()

    def start_prometheus(self) -> None:
        """Also used by tests that stop Prometheus mid-rollout and bring it back."""
        with _timed("prometheus"):
            write_config(self.layout.prometheus)
            self._start("prometheus", "prometheus", components.prometheus_argv)
            self._await_http(f"{self.prometheus_url}/-/ready", "prometheus")

    def stop_component(self, name: str) -> None:
        for process in self.processes.load():
            if process.name == name:
                self.processes.stop(process)

    def _await_http(self, url: str, what: str, client: str | None = None) -> None:
        context = ssl.create_default_context(cafile=str(self.layout.pki / "ca.crt"))
        if client is not None:
            context.load_cert_chain(self.layout.pki / f"{client}.crt", self.layout.pki / f"{client}.key")
        else:
            # kube-controller-manager and kube-scheduler serve self-signed certificates of their own.
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE

        def healthy() -> bool:
            with urllib.request.urlopen(url, timeout=2, context=context) as response:
                return bool(response.status == 200)

        wait_for(
            healthy, timeout=STARTUP_TIMEOUT, what=f"{what} at {url} (logs in {self.layout.root / 'logs'})"
        )

    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        return kubectl(self.kubeconfig, *args, stdin=stdin)

    @staticmethod
    def _fake_nodes() -> str:
        return "\n---\n".join(json.dumps(fake_node(name)) for name in FAKE_NODES)

    def install_crds(self, also: str = "") -> None:
        install_crds(self.kubectl, also=also)

    def _wait_for_nodes_ready(self) -> None:
        nodes = [f"node/{name}" for name in FAKE_NODES]
        self.kubectl("wait", "--for=condition=Ready", *nodes, f"--timeout={int(STARTUP_TIMEOUT)}s")

    def _wait_for_default_service_account(self) -> None:
        # Pods are refused until the service-account controller has created `default`.
        def created() -> bool:
            found = self.kubectl(
                "get", "serviceaccount/default", "-n", "default", "-o", "name", "--ignore-not-found"
            )
            return bool(found)

        wait_for(created, timeout=STARTUP_TIMEOUT, what="the default ServiceAccount")


def kubectl(kubeconfig: Path, *args: str, stdin: str | None = None) -> str:
    """The pinned kubectl against `kubeconfig`; a failure raises with kubectl's own message."""
    result = subprocess.run(
        [str(binary("kubectl")), f"--kubeconfig={kubeconfig}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"kubectl {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout


def fake_node(name: str, pods: int = 110) -> dict[str, object]:
    """A Node that kwok runs, with room for `pods` Pods (kubelet's default is 110) and eight GPUs, as
    NVIDIA's device plugin would advertise them, for Pods that request accelerators."""
    capacity = {"cpu": "32", "memory": "256Gi", "pods": str(pods), "nvidia.com/gpu": "8"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {components.KWOK_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "type": "kwok",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
            },
        },
        "status": {"allocatable": capacity, "capacity": capacity},
    }
