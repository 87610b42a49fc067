"""The egress policy: which addresses a tenant's URL may reach, however the address is written or
whatever a name resolves to, and where a Secret's token may go."""

from __future__ import annotations

import ipaddress

import pytest

from modelgate.api.addresses import AddressRefused, EgressPolicy, Refusal, token_may_go
from modelgate.egress import policy_from_environment, resolve

STRICT = EgressPolicy()
BED = EgressPolicy(allow_loopback=True)


def refusal(policy: EgressPolicy, url: str) -> Refusal | None:
    try:
        policy.check_url(url)
    except AddressRefused as refused:
        return refused.refusal
    return None


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://169.254.169.254/latest/meta-data/", Refusal.LINK_LOCAL),
        ("http://2852039166/", Refusal.LINK_LOCAL),  # decimal
        ("http://0xa9fea9fe/", Refusal.LINK_LOCAL),  # hex
        ("http://0251.0376.0251.0376/", Refusal.LINK_LOCAL),  # octal
        ("http://169.254.43518/", Refusal.LINK_LOCAL),  # two parts
        ("http://[::ffff:169.254.169.254]/", Refusal.LINK_LOCAL),  # IPv4-mapped IPv6
        ("http://[::ffff:a9fe:a9fe]/", Refusal.LINK_LOCAL),
        ("http://[64:ff9b::a9fe:a9fe]/", Refusal.LINK_LOCAL),  # NAT64
        ("http://[2002:a9fe:a9fe::]/", Refusal.LINK_LOCAL),  # 6to4
        ("http://[fe80::1]/", Refusal.LINK_LOCAL),
        ("http://[fe80::1%25eth0]:9090/", Refusal.LINK_LOCAL),
        ("http://[fd00:ec2::254]/", Refusal.METADATA),
        ("http://100.100.100.200/", Refusal.METADATA),
        ("http://127.0.0.1:9090", Refusal.LOOPBACK),
        ("http://127.1:9090", Refusal.LOOPBACK),
        ("http://2130706433/", Refusal.LOOPBACK),
        ("http://[::1]:9090", Refusal.LOOPBACK),
        ("http://[::ffff:127.0.0.1]:9090", Refusal.LOOPBACK),
        ("http://0.0.0.0:9090", Refusal.LOOPBACK),  # reaches this host
        ("http://[::]:9090", Refusal.LOOPBACK),
        ("http://224.0.0.1/", Refusal.NOT_UNICAST),
        ("http://admin:pw@prometheus:9090", Refusal.USERINFO),
        ("http://prometheus:9090@evil/", Refusal.USERINFO),
        ("http://prometheus:9090/#", Refusal.FRAGMENT),
        ("ftp://prometheus", Refusal.NOT_HTTP),
        ("http://prometheus:99999", Refusal.NOT_HTTP),
        ("http://prometheus.monitoring:9090", None),
        ("https://10.0.0.12/prometheus", None),
        ("http://[fd12::1]:9090", None),
    ],
)
def test_a_url_is_refused_for_what_it_reaches(url: str, expected: Refusal | None) -> None:
    assert refusal(STRICT, url) is expected


def test_the_local_bed_allows_loopback_and_nothing_more() -> None:
    assert refusal(BED, "http://127.0.0.1:9090") is None
    assert refusal(BED, "http://[::1]:9090") is None
    assert refusal(BED, "http://2852039166/") is Refusal.LINK_LOCAL


def test_the_api_servers_address_is_refused_on_its_port_even_on_loopback() -> None:
    server = frozenset({(ipaddress.ip_address("127.0.0.1"), 6443), (ipaddress.ip_address("10.96.0.1"), None)})
    policy = EgressPolicy(allow_loopback=True, api_server=server)
    assert refusal(policy, "https://127.0.0.1:6443/api") is Refusal.API_SERVER
    assert refusal(policy, "https://[::ffff:127.0.0.1]:6443/") is Refusal.API_SERVER
    assert refusal(policy, "http://127.0.0.1:9090") is None  # another port of the same host
    assert refusal(policy, "http://10.96.0.1:8080") is Refusal.API_SERVER  # the Service, any port


def test_a_name_is_refused_when_any_address_it_resolves_to_is() -> None:
    with pytest.raises(AddressRefused) as refused:
        STRICT.check_resolved(80, ["10.0.0.5", "169.254.169.254"])
    assert refused.value.refusal is Refusal.LINK_LOCAL
    with pytest.raises(AddressRefused) as unresolved:
        STRICT.check_resolved(80, [])
    assert unresolved.value.refusal is Refusal.UNRESOLVED
    STRICT.check_resolved(80, ["10.0.0.5", "fd12::5"])


def test_localhost_resolves_to_a_refused_address() -> None:
    """A name passes the URL's own check; what it resolves to does not."""
    assert refusal(STRICT, "http://localhost:9090") is None
    with pytest.raises(AddressRefused) as refused:
        STRICT.check_resolved(9090, resolve("localhost", 9090))
    assert refused.value.refusal is Refusal.LOOPBACK


def test_a_refusal_never_repeats_the_url() -> None:
    with pytest.raises(AddressRefused) as refused:
        STRICT.check_url("http://admin:s3cret@169.254.169.254/")
    assert "s3cret" not in str(refused.value)


def test_the_policy_from_the_environment() -> None:
    policy = policy_from_environment(
        ["https://127.0.0.1:6443"],
        {
            "KUBERNETES_SERVICE_HOST": "10.96.0.1",
            "KUBERNETES_SERVICE_PORT": "443",
            "MODELGATE_ALLOW_LOOPBACK": "true",
        },
    )
    assert policy.allow_loopback
    assert refusal(policy, "https://127.0.0.1:6443") is Refusal.API_SERVER
    assert refusal(policy, "https://10.96.0.1") is Refusal.API_SERVER
    assert not policy_from_environment([], {}).allow_loopback


@pytest.mark.parametrize(
    ("address", "allowed", "may"),
    [
        ("https://prom.example:9090", ["https://prom.example:9090"], True),
        ("https://PROM.example/api", ["https://prom.example:443"], True),  # case, default port
        ("https://prom.example/prometheus/x", ["https://prom.example/prometheus"], True),
        ("https://prom.example/prometheus-evil", ["https://prom.example/prometheus"], False),
        ("http://prom.example", ["https://prom.example"], False),  # another scheme
        ("https://prom.example:9091", ["https://prom.example:9090"], False),
        ("https://prom.example.evil", ["https://prom.example"], False),
        ("https://evil/", ["https://user:pw@evil/", "not a url"], False),
        ("https://user:pw@prom.example", ["https://prom.example"], False),
        ("https://prom.example", [], False),
    ],
)
def test_a_token_may_go_only_where_an_entry_names(address: str, allowed: list[str], may: bool) -> None:
    assert token_may_go(address, allowed) is may
