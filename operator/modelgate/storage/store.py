"""Objects in an S3-compatible store, read and written through obstore (docs/object-storage.md says
why that client). Reads return the object's version (its ETag), and can be pinned to one."""

from __future__ import annotations

import asyncio
import re
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, TypeVar

import obstore
from obstore.exceptions import (
    BaseError,
    PermissionDeniedError,
    PreconditionError,
    UnauthenticatedError,
)
from obstore.store import S3Store

from modelgate.api.addresses import AddressRefused, EgressPolicy, Refusal
from modelgate.api.object_url import ObjectUrl
from modelgate.egress import resolve_checked
from modelgate.storage.checked_tunnel import CheckedTunnel
from modelgate.storage.credentials import StorageCredentials
from modelgate.storage.storage_error import StorageError, StorageProblem

if TYPE_CHECKING:
    from obstore import GetOptions
    from obstore.store import ClientConfig, RetryConfig, S3Config

T = TypeVar("T")
# Test sets and replay sets are read whole into memory: a larger object is refused unread.
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
# A store that does not answer fails in seconds, not after obstore's default three minutes of retries.
RETRY: RetryConfig = {"max_retries": 2, "retry_timeout": timedelta(seconds=20)}
_CONNECT_SECONDS = 5
TIMEOUTS: ClientConfig = {
    "connect_timeout": timedelta(seconds=_CONNECT_SECONDS),
    "timeout": timedelta(seconds=120),
}
# How obstore words a request that never reached a server (reqwest's connect and timeout errors).
_UNREACHABLE_TEXT = ("error sending request", "connect", "timed out", "dns error")
# How obstore words the status of a store's error answer.
_STATUS = re.compile(r"non-2xx status code: (\d{3})")


@dataclass(frozen=True)
class StoredObject:
    data: bytes
    version: str  # the object's ETag, as the store gives it


class ObjectStore:
    """A store's objects, reached with `credentials` where `egress` allows: the endpoint is https,
    or http on a loopback address a local bed allows. Every failure is a StorageError naming the
    object."""

    def __init__(self, credentials: StorageCredentials, egress: EgressPolicy) -> None:
        self._credentials = credentials
        self._egress = egress
        self._buckets: dict[str, S3Store] = {}
        self._endpoint: _Endpoint | None = None

    async def read(
        self, url: ObjectUrl, *, version: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES
    ) -> StoredObject:
        """The object's bytes and version; with `version`, only that version (else CHANGED, the
        message naming both versions)."""
        store = await self._store(url)
        options: GetOptions | None = {"if_match": version} if version is not None else None
        try:
            result = await self._call(url, lambda: obstore.get_async(store, url.key, options=options))
        except StorageError as error:
            if error.problem is StorageProblem.CHANGED and version is not None:
                raise await self._changed(url, version) from None
            raise
        size = int(result.meta["size"])
        if size > max_bytes:
            raise StorageError(str(url), StorageProblem.TOO_LARGE, f"{size} bytes, more than {max_bytes}")
        data = await self._call(url, result.bytes_async)
        return StoredObject(bytes(data), _etag(result.meta.get("e_tag")))

    async def write(self, url: ObjectUrl, data: bytes) -> str:
        """Writes the object whole (replacing any); its new version."""
        store = await self._store(url)
        put = await self._call(url, lambda: obstore.put_async(store, url.key, data))
        return _etag(put.get("e_tag"))

    async def keys(self, prefix: ObjectUrl, max_keys: int = 1_000_000) -> list[str]:
        """The keys of the objects directly under `prefix` (not in its sub-folders), at most
        `max_keys` (else TOO_LARGE: a lifecycle rule should keep a prefix smaller)."""
        store = await self._store(prefix)
        folder = f"{prefix.key}/" if prefix.key else ""

        async def listed() -> list[str]:
            keys: list[str] = []
            async for chunk in obstore.list(store, prefix.key or None, chunk_size=1000):
                keys += [meta["path"] for meta in chunk if "/" not in meta["path"].removeprefix(folder)]
                if len(keys) > max_keys:
                    raise StorageError(str(prefix), StorageProblem.TOO_LARGE, f"more than {max_keys} objects")
            return keys

        return await self._call(prefix, listed)

    async def version(self, url: ObjectUrl) -> str:
        store = await self._store(url)
        meta = await self._call(url, lambda: obstore.head_async(store, url.key))
        return _etag(meta.get("e_tag"))

    async def _changed(self, url: ObjectUrl, expected: str) -> StorageError:
        try:
            now = f"version {await self.version(url)}"
        except StorageError as error:
            now = "no object" if error.problem is StorageProblem.NO_KEY else "a version it cannot tell"
        return StorageError(str(url), StorageProblem.CHANGED, f"it was version {expected}, it is now {now}")

    async def _store(self, url: ObjectUrl) -> S3Store:
        if self._endpoint is None:
            self._endpoint = await asyncio.to_thread(self._checked_endpoint, url)
        if url.bucket not in self._buckets:
            credentials, endpoint = self._credentials, self._endpoint
            config: S3Config = {
                "endpoint": endpoint.url,
                "region": credentials.region,
                "access_key_id": credentials.access_key_id,
                "secret_access_key": credentials.secret_access_key,
                "virtual_hosted_style_request": False,
            }
            if credentials.session_token:
                config["session_token"] = credentials.session_token
            options: ClientConfig = {**TIMEOUTS, "allow_http": endpoint.tunnel is None}
            if endpoint.tunnel is not None:
                options["proxy_url"] = endpoint.tunnel.proxy_url
            self._buckets[url.bucket] = S3Store(
                url.bucket, config=config, client_options=options, retry_config=RETRY
            )
        return self._buckets[url.bucket]

    def _checked_endpoint(self, url: ObjectUrl) -> _Endpoint:
        """Where obstore connects: an https endpoint through a CheckedTunnel, plain http (loopback
        only) at the checked address itself; StorageError when the egress policy refuses it. A
        message never repeats the endpoint (it could hold a password) nor what it resolves to."""
        try:
            target = self._egress.check_url(self._credentials.endpoint_url)
            if target.path:
                raise StorageError(str(url), StorageProblem.REFUSED, "the endpoint must have no path")
            addresses = resolve_checked(target.host, target.port, self._egress)
        except AddressRefused as refused:
            problem = StorageProblem.UNREACHABLE if refused.refusal is Refusal.UNRESOLVED else None
            raise StorageError(
                str(url), problem or StorageProblem.REFUSED, f"the endpoint {refused.refusal.value}"
            ) from None
        if target.scheme == "https":
            tunnel = CheckedTunnel(target.host, target.port, self._egress, _CONNECT_SECONDS)
            weakref.finalize(self, tunnel.close)
            return _Endpoint(target.origin, tunnel)
        if not all(ip.is_loopback for ip in addresses):
            raise StorageError(
                str(url),
                StorageProblem.REFUSED,
                "the endpoint must be https:// (http:// only on loopback in a bed)",
            )
        # The address just checked, not the name: nothing resolves it again.
        return _Endpoint(replace(target, host=str(addresses[0])).origin, None)

    async def _call(self, url: ObjectUrl, operation: Callable[[], Awaitable[T]]) -> T:
        try:
            return await operation()
        # obstore raises the built-in FileNotFoundError for a missing object or bucket, and
        # ValueError for some configurations.
        except (BaseError, FileNotFoundError, ValueError) as error:
            raise self._translated(url, error) from None

    def _translated(self, url: ObjectUrl, error: Exception) -> StorageError:
        """The failure as a problem and an HTTP status. obstore's text holds the request's URL and
        the store's answer, never repeated: it is read only for the status and the kind, which
        obstore gives in no other form."""
        text = str(error)
        found = _STATUS.search(text)
        status = int(found.group(1)) if found else None
        tunnel = self._endpoint.tunnel if self._endpoint is not None else None
        if status is None and tunnel is not None and tunnel.refused is not None:
            refusal = tunnel.refused.refusal.value
            return StorageError(str(url), StorageProblem.REFUSED, f"the endpoint {refusal}")
        if isinstance(error, FileNotFoundError):
            missing = "NoSuchBucket" in text
            problem = StorageProblem.NO_BUCKET if missing else StorageProblem.NO_KEY
        elif isinstance(error, PermissionDeniedError | UnauthenticatedError):
            problem = StorageProblem.CREDENTIALS
        elif isinstance(error, PreconditionError):
            problem = StorageProblem.CHANGED
        elif status is None and any(words in text.lower() for words in _UNREACHABLE_TEXT):
            problem = StorageProblem.UNREACHABLE
        else:
            problem = StorageProblem.FAILED
        return StorageError(str(url), problem, status=status)


@dataclass(frozen=True)
class _Endpoint:
    url: str  # what obstore is given
    tunnel: CheckedTunnel | None  # its proxy, for https


def _etag(value: str | None) -> str:
    """The ETag without its quotes: a version to compare, pin, and put in a key."""
    return (value or "").strip('"')
