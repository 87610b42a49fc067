"""Loopback, link-local and the API server written as a host the HTTP clients turn into an IP literal:
Unicode digits and dots (UTS-46 maps fullwidth ones to ASCII), numeric forms and NAT64. Each
is refused by the shared check, and through each client's own path (aiohttp: notifications and the
evaluator; requests: Prometheus; obstore: object storage) with a listener on 127.0.0.1 that must see
no connection."""

from __future__ import annotations

import asyncio
import ipaddress

import aiohttp
import pytest
import requests
from urllib3.util.retry import Retry

from modelgate.api.addresses import AddressRefused, EgressPolicy, Refusal
from modelgate.egress import checked_aiohttp_session as aiohttp_session
from modelgate.metrics.requests_session import checked_requests_session as requests_session
from modelgate.storage import ObjectStore, StorageCredentials, StorageError, StorageProblem, parse_object_url
from tests.support.disguised_hosts import LOOPBACK_FORMS, METADATA_FORMS, NAT64_FORMS
from tests.support.listener import Listener, listener

__all__ = ["listener"]  # the fixture


def policies(port: int) -> list[tuple[EgressPolicy, Refusal]]:
    """Outside a bed: loopback refused. On a bed: loopback allowed, the API server's port not."""
    api_server = frozenset({(ipaddress.ip_address("127.0.0.1"), port)})
    return [
        (EgressPolicy(), Refusal.LOOPBACK),
        (EgressPolicy(allow_loopback=True, api_server=api_server), Refusal.API_SERVER),
    ]


@pytest.mark.parametrize("host", LOOPBACK_FORMS + NAT64_FORMS)
def test_the_shared_check_judges_the_address_the_client_reaches(host: str) -> None:
    for policy, expected in policies(6443):
        with pytest.raises(AddressRefused) as refused:
            policy.check_url(f"https://{host}:6443/api")
        assert refused.value.refusal is expected


@pytest.mark.parametrize(
    "host",
    [*METADATA_FORMS, "[64:ff9b:1::a9fe:a9fe]", "[64:ff9b:1:a9fe:a9:fe00::]"],
)
def test_a_disguised_metadata_address_is_link_local(host: str) -> None:
    with pytest.raises(AddressRefused) as refused:
        EgressPolicy(allow_loopback=True).check_url(f"http://{host}/latest/meta-data/")
    assert refused.value.refusal is Refusal.LINK_LOCAL


@pytest.mark.parametrize("host", ["a..b", ".a", "xn--", f"{'a' * 64}.example"])
def test_a_host_no_client_could_send_is_refused_not_raised(host: str) -> None:
    with pytest.raises(AddressRefused) as refused:
        EgressPolicy().check_url(f"http://{host}/x")
    assert refused.value.refusal is Refusal.NOT_IDNA


@pytest.mark.parametrize(
    "host",
    ["b\u00fccher.example", "xn--bcher-kva.example", "[64:ff9b:1::808:808]", "[64:ff9b:1:808:8:800::]"],
)
def test_a_real_name_or_a_public_nat64_address_passes(host: str) -> None:
    EgressPolicy().check_url(f"http://{host}/")


@pytest.mark.parametrize("host", LOOPBACK_FORMS)
def test_aiohttp_refuses_without_connecting(listener: Listener, host: str) -> None:
    async def get(policy: EgressPolicy) -> None:
        url, timeout = f"http://{host}:{listener.port}/", aiohttp.ClientTimeout(total=2)
        async with aiohttp_session(policy) as session, session.get(url, timeout=timeout):
            pass

    for policy, expected in policies(listener.port):
        with pytest.raises(AddressRefused) as refused:
            asyncio.run(get(policy))
        assert refused.value.refusal is expected
    assert listener.connections() == 0


@pytest.mark.parametrize("host", LOOPBACK_FORMS)
def test_requests_refuses_without_connecting(listener: Listener, host: str) -> None:
    address = f"http://{host}:{listener.port}"
    for policy, _ in policies(listener.port):
        session = requests_session(policy, address, Retry(0), 1)
        # requests' own IDNA (2008, no mapping) refuses the Unicode forms as invalid URLs.
        with pytest.raises((AddressRefused, requests.exceptions.InvalidURL)):
            session.get(f"{address}/api/v1/query", timeout=2)
    assert listener.connections() == 0


@pytest.mark.parametrize("host", LOOPBACK_FORMS)
def test_object_storage_refuses_the_endpoint_without_connecting(listener: Listener, host: str) -> None:
    url = parse_object_url("s3://sets/team-a/qa.jsonl")
    credentials = StorageCredentials(f"http://{host}:{listener.port}", "us-east-1", "AKIAEXAMPLE", "secret")
    for policy, _ in policies(listener.port):
        with pytest.raises(StorageError) as raised:
            asyncio.run(ObjectStore(credentials, policy).read(url))
        assert raised.value.problem is StorageProblem.REFUSED
    assert listener.connections() == 0
