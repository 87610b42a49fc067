"""The newest N requests the refusal proxy recorded under an s3:// prefix, as a replay set.

The newest N requests the refusal proxy recorded under an s3:// prefix (`--record`,
docs/refusal-sidecar.md), as a replay set: the prefix is listed, its objects read newest first until
no older one can hold any of the newest N, and those N are replayed oldest first.

An object's name carries the time of its newest record (modelgate.recordings), so once N records
are at least as new as the next object's name, no older object can change the answer."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

from modelgate.api.addresses import EgressPolicy
from modelgate.api.gate_result import StoredData
from modelgate.api.object_url import ObjectUrl
from modelgate.evaluator.jsonl import InputError
from modelgate.evaluator.replay_set import RecordedRequest, parse_replay
from modelgate.evaluator.storage_failure import StoredInputError
from modelgate.recordings import RECORDED_AT, newest_first, parse_time
from modelgate.storage import MissingCredentials, ObjectStore, StorageCredentials, StorageError

ReadObject = Callable[[str], Awaitable[bytes]]
# The store's endpoint and credentials are the replay's (a gate Job takes them from its Secret).
CREDENTIALS_OPTION = "--replay"


@dataclass(frozen=True)
class RecordedSource:
    """`modelgate eval --replay-recorded PREFIX --replay-last N`."""

    prefix: ObjectUrl
    last: int


async def read_recorded(
    source: RecordedSource, egress: EgressPolicy, environ: Mapping[str, str]
) -> list[RecordedRequest]:
    """The source's requests; InputError naming the prefix (or the object) when they cannot be read."""
    try:
        store = ObjectStore(StorageCredentials.for_option(CREDENTIALS_OPTION, environ), egress)
        return await recorded_replay(store, source.prefix, source.last)
    except (MissingCredentials, StorageError) as error:
        raise StoredInputError(f"--replay-recorded {source.prefix}: {error}", StoredData.RECORDED) from None


@dataclass(frozen=True)
class _Record:
    recorded_at: datetime
    line: str


async def newest_records(names: list[str], read: ReadObject, last: int, source: str) -> list[str]:
    """The `last` newest record lines among the objects `names` (read with `read`), oldest first."""
    ordered = newest_first(names)
    kept: list[_Record] = []
    for index, (name, _) in enumerate(ordered):
        kept += _records((await read(name)).decode("utf-8", errors="replace"), f"{source}/{name}")
        older = ordered[index + 1][1] if index + 1 < len(ordered) else None
        if older is not None and sum(record.recorded_at >= older for record in kept) >= last:
            break
    kept.sort(key=lambda record: record.recorded_at)
    return [record.line for record in kept[-last:]]


async def recorded_replay(store: ObjectStore, prefix: ObjectUrl, last: int) -> list[RecordedRequest]:
    """The newest `last` recorded requests under `prefix`; InputError when there are none."""
    keys = await store.keys(prefix)

    async def read(key: str) -> bytes:
        return (await store.read(ObjectUrl(prefix.bucket, key))).data

    lines = await newest_records(keys, read, last, f"s3://{prefix.bucket}")
    if not lines:
        raise InputError(f"{prefix}: no recorded requests (objects written by refusal-proxy --record)")
    return parse_replay("\n".join(lines), f"{prefix} (the newest {len(lines)} recorded requests)")


def _records(text: str, source: str) -> list[_Record]:
    records = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            recorded_at = parse_time(json.loads(line)[RECORDED_AT])
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            raise InputError(f"{source}, line {number}: not a recorded request ({error})") from None
        records.append(_Record(recorded_at, line))
    return records
