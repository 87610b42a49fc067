"""A requests session for a tenant's address, its every connection checked by the egress policy.

A requests session for a tenant's address: it checks the address each new connection reached
against an EgressPolicy before sending anything on it, so a name that resolves to a metadata or
loopback address (at the time of the connection, not of an earlier lookup) or an IP in a disguised
form is refused; it follows no redirect (the request's credentials would go along), and it
ignores the environment's proxies and .netrc, which are the operator's, not the tenant's. Its
connections obey the calling thread's Deadline (metrics/deadline.py) as well."""

from __future__ import annotations

import socket
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.util.retry import Retry

from modelgate.api.addresses import EgressPolicy, literal_ip
from modelgate.egress import check_peer
from modelgate.metrics.deadline import WatchedHTTPConnection, WatchedHTTPSConnection


def checked_requests_session(
    policy: EgressPolicy | None, address: str, retries: Retry, pool_maxsize: int
) -> requests.Session:
    """A session for `address`; with a policy of None, for an address the caller trusts (one given
    on its own command line): no check of the peer, still no redirect."""
    session = requests.Session()
    session.max_redirects = 0  # a redirect raises TooManyRedirects with the 3xx response
    if policy is not None:
        session.trust_env = False
        # Every other address (a redirect's, were one followed) goes through the check as well.
        session.mount("http://", _CheckedAdapter(policy, max_retries=retries))
        session.mount("https://", _CheckedAdapter(policy, max_retries=retries))
    session.mount(f"{address}/", _CheckedAdapter(policy, max_retries=retries, pool_maxsize=pool_maxsize))
    return session


def _checked(connection: type[HTTPConnection], policy: EgressPolicy | None) -> type[HTTPConnection]:
    if policy is None:
        return connection
    checked_policy = policy  # narrowed for the class body

    class CheckedConnection(connection):  # type: ignore[valid-type,misc]
        def _new_conn(self) -> socket.socket:
            literal = literal_ip(self.host.strip("[]"))  # an IP in any form is refused unconnected
            if literal is not None:
                checked_policy.check_ip(literal, int(self.port))
            sock: socket.socket = super()._new_conn()
            check_peer(sock, checked_policy)
            return sock

    return CheckedConnection


class _CheckedAdapter(HTTPAdapter):
    def __init__(self, policy: EgressPolicy | None, **kwargs: Any) -> None:
        self._policy = policy  # before HTTPAdapter's __init__, which makes the pool manager
        super().__init__(**kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = {
            "http": type(
                "CheckedHTTPPool",
                (HTTPConnectionPool,),
                {"ConnectionCls": _checked(WatchedHTTPConnection, self._policy)},
            ),
            "https": type(
                "CheckedHTTPSPool",
                (HTTPSConnectionPool,),
                {"ConnectionCls": _checked(WatchedHTTPSConnection, self._policy)},
            ),
        }
