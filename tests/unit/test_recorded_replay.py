"""The gate's replay of "the newest N recorded requests": objects written by several proxies, their
records interleaved in time, give exactly the N newest records, oldest first, reading no more objects
than needed."""

from __future__ import annotations

import asyncio
import json
import random
from datetime import UTC, datetime, timedelta

import pytest

from modelgate.evaluator.jsonl import InputError
from modelgate.evaluator.recorded_replay import newest_records
from modelgate.recordings import RECORDED_AT, format_time, object_name

START = datetime(2026, 12, 5, 6, 0, tzinfo=UTC)


def recordings(seed: int) -> dict[str, bytes]:
    """Three pods, each flushing batches of 1 to 6 records; every record a distinct time."""
    draw = random.Random(seed)
    objects: dict[str, bytes] = {}
    times = iter(sorted(draw.sample(range(100_000), 300)))
    batches: dict[str, list[datetime]] = {"pod-a": [], "pod-b": [], "pod-c": []}
    for number, time in enumerate(times):
        pod = draw.choice(sorted(batches))
        batches[pod].append(START + timedelta(milliseconds=time))
        if len(batches[pod]) >= draw.randint(1, 6):
            flushed = batches[pod][-1] + timedelta(milliseconds=draw.randint(0, 5))
            lines = [
                json.dumps({"prompt": f"at {t.isoformat()}", RECORDED_AT: format_time(t)})
                for t in batches[pod]
            ]
            objects[f"rec/{object_name(flushed, pod, number)}"] = "\n".join(lines).encode() + b"\n"
            batches[pod] = []
    return objects


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("last", [1, 7, 40, 1000])
def test_the_newest_n_records_oldest_first_and_no_more_objects_read_than_needed(seed: int, last: int) -> None:
    objects = recordings(seed)
    every = sorted((json.loads(line) for body in objects.values() for line in body.splitlines()), key=str)
    expected = sorted(every, key=lambda record: record[RECORDED_AT])[-last:]
    read: list[str] = []

    async def reader(name: str) -> bytes:
        read.append(name)
        return objects[name]

    names = [*objects, "rec/README.txt"]  # names not written by the proxy are left out
    lines = asyncio.run(newest_records(names, reader, last, "s3://bucket/rec"))
    assert [json.loads(line) for line in lines] == expected
    if last < len(every):
        assert len(read) < len(objects)


def test_a_line_without_its_recording_time_is_an_error_naming_the_object() -> None:
    name = f"rec/{object_name(START, 'pod-a', 1)}"

    async def reader(_: str) -> bytes:
        return b'{"prompt": "no time"}\n'

    with pytest.raises(InputError, match=rf"s3://bucket/{name}, line 1"):
        asyncio.run(newest_records([name], reader, 5, "s3://bucket"))
