"""The loopback node's Pod range, the placement of Deployments on it, and the EndpointSlices the bed
publishes for its Pods (testbed/loopback_pods.py); and Traefik's static configuration."""

from __future__ import annotations

import ipaddress

import pytest

from testbed.loopback_pods import (
    LOOPBACK_NODE,
    LOOPBACK_TAINT,
    ReadyPod,
    endpoint_slice,
    loopback_node,
    on_loopback_node,
    pod_network,
)
from testbed.manifests import model_deployment
from testbed.traefik_gateway import ADMIN_ENTRYPOINT, WEB_ENTRYPOINT, gateway, static_config


def test_each_api_server_port_names_its_own_loopback_range_away_from_127_0_0_1() -> None:
    networks = [pod_network(port) for port in (1024, 1025, 6443, 57647, 65535)]
    assert all(network.subnet_of(ipaddress.IPv4Network("127.0.0.0/8")) for network in networks)
    assert len(set(networks)) == len(networks)
    assert all(ipaddress.IPv4Address("127.0.0.1") not in network for network in networks)
    assert pod_network(57647) == ipaddress.IPv4Network("127.225.47.0/24")


@pytest.mark.parametrize("port", [0, 80, 1023, 65536])
def test_a_port_outside_1024_to_65535_names_no_range(port: int) -> None:
    with pytest.raises(ValueError, match=r"not in 1024\.\.65535"):
        pod_network(port)


def test_only_pods_that_tolerate_the_loopback_node_run_there() -> None:
    node = loopback_node(ipaddress.IPv4Network("127.4.0.0/24"))
    assert node["spec"]["podCIDR"] == "127.4.0.0/24"
    assert [taint["key"] for taint in node["spec"]["taints"]] == [LOOPBACK_TAINT]

    deployment = model_deployment("chat-v1", "ns")
    placed = on_loopback_node(deployment)["spec"]["template"]["spec"]
    assert placed["nodeSelector"] == {"kubernetes.io/hostname": LOOPBACK_NODE}
    assert [toleration["key"] for toleration in placed["tolerations"]] == [LOOPBACK_TAINT]
    assert "tolerations" not in deployment["spec"]["template"]["spec"], "the original is left as it was"


def test_the_published_slice_names_the_service_and_lists_each_ready_pod_at_the_target_port() -> None:
    pods = [ReadyPod("chat-v1-a", "127.4.0.1"), ReadyPod("chat-v1-b", "127.4.0.2")]
    slice_ = endpoint_slice("ns", "chat-v1", 8000, pods)
    assert slice_["addressType"] == "FQDN"  # the API server refuses loopback IPv4 addresses
    assert slice_["metadata"]["labels"]["kubernetes.io/service-name"] == "chat-v1"
    assert slice_["ports"] == [{"name": "", "port": 8000, "protocol": "TCP"}]
    assert [
        (e["targetRef"]["name"], e["addresses"], e["conditions"]["ready"]) for e in slice_["endpoints"]
    ] == [
        ("chat-v1-a", ["127.4.0.1"], True),
        ("chat-v1-b", ["127.4.0.2"], True),
    ]


def test_a_pod_off_loopback_is_never_published() -> None:
    with pytest.raises(ValueError, match=r"pod ns/chat-v1-a has IP 10\.0\.0\.1"):
        endpoint_slice("ns", "chat-v1", 8000, [ReadyPod("chat-v1-a", "10.0.0.1")])


def test_traefik_listens_on_loopback_only_and_its_gateway_listener_is_the_web_entrypoint() -> None:
    config = static_config(web_port=18080, admin_port=18081)
    addresses = {name: entry["address"] for name, entry in config["entryPoints"].items()}
    assert addresses == {WEB_ENTRYPOINT: "127.0.0.1:18080", ADMIN_ENTRYPOINT: "127.0.0.1:18081"}
    assert config["ping"]["entryPoint"] == config["metrics"]["prometheus"]["entryPoint"] == ADMIN_ENTRYPOINT
    assert "kubernetesGateway" in config["providers"]

    listeners = gateway("inference", "ns", 18080)["spec"]["listeners"]
    assert [(listener["protocol"], listener["port"]) for listener in listeners] == [("HTTP", 18080)]
