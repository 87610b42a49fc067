"""Shared fixtures. Cluster tests take their cluster from MODELGATE_KUBECONFIG (kind, or any
cluster) when it is set; otherwise the session starts the local bed in a scratch folder and stops
exactly what it started at the end."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from modelgate.egress import ALLOW_LOOPBACK_ENV
from modelgate.metrics.prometheus_http import PrometheusClient
from testbed.crds import install_crds
from testbed.localcluster import LocalCluster, kubectl
from testbed.loopback_pods import LoopbackPods
from testbed.operator_process import OperatorProcess
from testbed.s3_server import S3Server
from testbed.traefik_gateway import TraefikGateway, gateway_class
from tests.support.clusters import TestCluster
from tests.support.kube import scratch_namespace

BED_BUCKET = "modelgate-bed"
# Files of a minute or two of rollouts each: sent out first, so that no worker starts one last while
# the others have nothing left (`make test` hands out whole files, in the order collected).
LONGEST_FILES = (
    "test_simulated_rollbacks.py",
    "test_simulated_presets.py",
    "test_simulated_promotion.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = str(item.path).replace(os.sep, "/")
        if "tests/cluster/" in path:
            item.add_marker(pytest.mark.cluster)
    # Stable: the other files keep their order.
    items.sort(
        key=lambda item: (
            LONGEST_FILES.index(item.path.name) if item.path.name in LONGEST_FILES else len(LONGEST_FILES)
        )
    )


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestCluster]:
    external = os.environ.get("MODELGATE_KUBECONFIG")
    if external:
        install_crds(functools.partial(kubectl, Path(external)))
        yield TestCluster(kubeconfig=Path(external), local=None)
        return
    bed = LocalCluster(tmp_path_factory.mktemp("bed"))
    bed.up()
    try:
        yield TestCluster(kubeconfig=bed.kubeconfig, local=bed)
    finally:
        bed.down()


@pytest.fixture(scope="session")
def local_bed(cluster: TestCluster) -> LocalCluster:
    """The local bed's extras (its Prometheus, process control); skipped on other clusters."""
    if cluster.local is None:
        pytest.skip("needs the local bed (MODELGATE_KUBECONFIG points at another cluster)")
    return cluster.local


@pytest.fixture(scope="session")
def api_client(cluster: TestCluster) -> client.ApiClient:
    return config.new_client_from_config(config_file=str(cluster.kubeconfig))


@pytest.fixture
def namespace(api_client: client.ApiClient) -> Iterator[str]:
    with scratch_namespace(api_client) as name:
        yield name


@pytest.fixture(scope="module")
def shared_namespace(api_client: client.ApiClient) -> Iterator[str]:
    """One namespace for a whole table of a test file: refused objects leave nothing behind, and
    the ones created each have a name of their own."""
    with scratch_namespace(api_client) as name:
        yield name


@pytest.fixture(scope="session")
def operator(cluster: TestCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    """`modelgate run` as a real process for the whole session; tests may kill and restart it."""
    # A changed route is looked at 1 s after the last tick, not 10 s: the tests that change a finished
    # rollout's route wait for it (tests/unit/test_loops.py covers the wait itself).
    process = OperatorProcess(
        cluster.kubeconfig, tmp_path_factory.mktemp("operator"), extra_args=["--route-recheck=1"]
    )
    process.start()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def traefik(local_bed: LocalCluster, api_client: client.ApiClient) -> Iterator[TraefikGateway]:
    """Opt-in: a real Gateway API data plane (Traefik) for HTTPRoutes, and the loopback node whose
    Pods it reaches; tests without it get their traffic from the traffic driver. One per test file:
    left running, it would rebuild its configuration at every change the later files make to the
    bed's namespaces, Services and EndpointSlices, and spend the suite's CPU on it."""
    LoopbackPods(local_bed, api_client).ensure_node()
    local_bed.kubectl("apply", "-f", "-", stdin=json.dumps(gateway_class()))
    gateway = TraefikGateway.start(local_bed)
    yield gateway
    gateway.stop()


@pytest.fixture(scope="session")
def s3_server(local_bed: LocalCluster) -> Iterator[S3Server]:
    """Opt-in: the bed's S3-compatible server (moto) on 127.0.0.1, with credentials that it checks
    and one bucket, BED_BUCKET; tests keep to keys of their own."""
    server = S3Server.start(local_bed.processes, (BED_BUCKET,))
    yield server
    server.stop()


@pytest.fixture
def operator_scraped(local_bed: LocalCluster, operator: OperatorProcess) -> Iterator[PrometheusClient]:
    """The bed's Prometheus scrapes the session's operator (its own metrics) while the test runs."""
    target = "modelgate-operator"
    local_bed.scrape_targets.add(target, f"127.0.0.1:{operator.metrics_port}", {"job": "modelgate"})
    yield PrometheusClient(local_bed.prometheus_url, timeout=2)
    local_bed.scrape_targets.remove(target)


@pytest.fixture
def prometheus_restarted(local_bed: LocalCluster) -> Iterator[None]:
    """Whatever a test does to the bed's Prometheus, the next test finds it running."""
    yield
    if not any(p.name == "prometheus" for p in local_bed.processes.load()):
        local_bed.start_prometheus()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """What tests measured (`record_property(name, value)`), shown in every run's log, `make test`
    included, not only with -s."""
    lines = [
        f"{report.nodeid}: {name}: {value}"
        for reports in terminalreporter.stats.values()
        for report in reports
        if getattr(report, "when", None) == "call"
        for name, value in getattr(report, "user_properties", ())
    ]
    if lines:
        terminalreporter.write_sep("-", "measurements")
        for line in lines:
            terminalreporter.write_line(line)


@pytest.fixture
def loopback_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tenants' URLs may reach 127.0.0.1, where the tests' servers listen, as in the local bed."""
    monkeypatch.setenv(ALLOW_LOOPBACK_ENV, "true")
