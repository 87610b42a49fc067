"""Object storage for the tests: stores on the bed's S3 server (testbed/s3_server.py), with its
credentials or wrong ones, and keys of a test's own."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import Coroutine
from typing import Any, TypeVar

from modelgate.api.addresses import EgressPolicy
from modelgate.api.object_url import ObjectUrl
from modelgate.storage import ObjectStore, StorageCredentials
from testbed.s3_server import REGION, S3Server

T = TypeVar("T")
# A secret key for tests that must never see it again in a message.
SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
BED_EGRESS = EgressPolicy(allow_loopback=True)


def bed_store(server: S3Server, *, secret_access_key: str | None = None) -> ObjectStore:
    credentials = StorageCredentials(
        server.endpoint, REGION, server.access_key_id, secret_access_key or server.secret_access_key
    )
    return ObjectStore(credentials, BED_EGRESS)


def aws_environment(server: S3Server) -> dict[str, str]:
    """The $AWS_* variables that reach the server, as a person's shell has them (the CLI's)."""
    return {
        "AWS_ENDPOINT_URL": server.endpoint,
        "AWS_REGION": REGION,
        "AWS_ACCESS_KEY_ID": server.access_key_id,
        "AWS_SECRET_ACCESS_KEY": server.secret_access_key,
    }


def fresh_url(server: S3Server, name: str) -> ObjectUrl:
    """A key no other test uses, in the server's first bucket."""
    return ObjectUrl(server.buckets[0], f"tests/{uuid.uuid4().hex[:12]}/{name}")


def closed_port() -> int:
    """A loopback port nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)
