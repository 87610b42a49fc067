"""Command lines of the control plane's components. Pure: paths and ports in, argv out.
Every listener is bound to 127.0.0.1."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

LOOPBACK = "127.0.0.1"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"


@dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int
    kwok: int
    prometheus: int


@dataclass(frozen=True)
class Layout:
    """Where one bed keeps its state."""

    root: Path

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    def component_kubeconfig(self, component: str) -> Path:
        return self.pki / f"{component}.kubeconfig"

    @property
    def kwok_stages(self) -> Path:
        return self.root / "kwok-stages.yaml"

    @property
    def prometheus(self) -> Path:
        return self.root / "prometheus"


def etcd_argv(binary: Path, layout: Layout, ports: Ports) -> list[str]:
    client = f"http://{LOOPBACK}:{ports.etcd_client}"
    peer = f"http://{LOOPBACK}:{ports.etcd_peer}"
    return [
        str(binary),
        "--name=bed",
        f"--data-dir={layout.etcd_data}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=bed={peer}",
        # A throwaway test store: durability buys nothing and fsync costs seconds per test run.
        "--unsafe-no-fsync",
        "--log-level=warn",
    ]


def apiserver_argv(binary: Path, layout: Layout, ports: Ports, *, profiling: bool = False) -> list[str]:
    """`profiling` serves /debug/pprof (to system:masters only, under --authorization-mode RBAC)."""
    pki = layout.pki
    return [
        str(binary),
        f"--etcd-servers=http://{LOOPBACK}:{ports.etcd_client}",
        f"--bind-address={LOOPBACK}",
        f"--advertise-address={LOOPBACK}",
        f"--secure-port={ports.apiserver}",
        f"--tls-cert-file={pki / 'apiserver.crt'}",
        f"--tls-private-key-file={pki / 'apiserver.key'}",
        f"--client-ca-file={pki / 'ca.crt'}",
        f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
        f"--service-account-key-file={pki / 'sa.pub'}",
        f"--service-account-signing-key-file={pki / 'sa.key'}",
        f"--api-audiences={SERVICE_ACCOUNT_ISSUER}",
        "--authorization-mode=Node,RBAC",
        "--service-cluster-ip-range=10.96.0.0/16",
        # No kube-proxy or real endpoints here; the reconciler would publish 127.0.0.1 as the
        # `kubernetes` Service's endpoint, which nothing can reach from a Pod.
        "--endpoint-reconciler-type=none",
        "--allow-privileged=true",
        f"--profiling={str(profiling).lower()}",
        "--v=0",
    ]


# As kubeadm runs them: a controller-manager or scheduler that cannot renew its lease (the API server
# gone for longer than the 10 s renew deadline) exits, and its supervisor (the kubelet; here
# testbed.supervisor) starts it again with fresh watches. Without it, one that outlived an outage kept
# watches that client-go's reflectors retry with a backoff growing to 30 s (doubled by jitter), and
# acted on new Deployments a minute late (bench/REPORT.md, Faults).
LEADER_ELECTION = ("--leader-elect=true",)


def controller_manager_argv(binary: Path, layout: Layout, ports: Ports) -> list[str]:
    pki = layout.pki
    kubeconfig = layout.component_kubeconfig("controller-manager")
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--bind-address={LOOPBACK}",
        f"--secure-port={ports.controller_manager}",
        f"--cert-dir={pki / 'controller-manager-serving'}",
        f"--service-account-private-key-file={pki / 'sa.key'}",
        f"--root-ca-file={pki / 'ca.crt'}",
        f"--cluster-signing-cert-file={pki / 'ca.crt'}",
        f"--cluster-signing-key-file={pki / 'ca.key'}",
        "--use-service-account-credentials=true",
        # The default 20 requests a second take minutes to start the 2,000 Pods of bench/test_scale.
        "--kube-api-qps=200",
        "--kube-api-burst=400",
        *LEADER_ELECTION,
        "--profiling=false",
        "--v=0",
    ]


def scheduler_argv(binary: Path, layout: Layout, ports: Ports) -> list[str]:
    kubeconfig = layout.component_kubeconfig("scheduler")
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}",
        f"--authorization-kubeconfig={kubeconfig}",
        f"--bind-address={LOOPBACK}",
        f"--secure-port={ports.scheduler}",
        f"--cert-dir={layout.pki / 'scheduler-serving'}",
        "--kube-api-qps=200",
        "--kube-api-burst=400",
        *LEADER_ELECTION,
        "--profiling=false",
        "--v=0",
    ]


KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"


def kwok_argv(binary: Path, layout: Layout, ports: Ports) -> list[str]:
    return [
        str(binary),
        f"--kubeconfig={layout.component_kubeconfig('kwok')}",
        f"--config={layout.kwok_stages}",
        f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
        f"--server-address={LOOPBACK}:{ports.kwok}",
        f"--node-ip={LOOPBACK}",
        "--node-lease-duration-seconds=40",
        "--cidr=10.0.0.0/16",
    ]


def prometheus_argv(binary: Path, layout: Layout, ports: Ports) -> list[str]:
    return [
        str(binary),
        f"--config.file={layout.prometheus / 'prometheus.yml'}",
        f"--storage.tsdb.path={layout.prometheus / 'data'}",
        "--storage.tsdb.retention.time=6h",
        # Exemplars (trace IDs) the doubles attach to their series, read back by a rollback's
        # evidence (/api/v1/query_exemplars).
        "--enable-feature=exemplar-storage",
        f"--web.listen-address={LOOPBACK}:{ports.prometheus}",
        "--log.level=warn",
    ]
