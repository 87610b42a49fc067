"""The refusal proxy's recording of sampled requests, batched and written in the background.

The refusal proxy's recording of sampled requests (`--record`, docs/refusal-sidecar.md): a
per-request draw, records batched into objects (one per `batch_requests` records, `batch_seconds` or
`object_bytes`, whichever comes first) and written one after another, in the background, to a
`RecordSink`.

Bounded: a record enters the batch only if the bytes accepted so far stay within `max_bytes`; past
it recording stops for good (`llm_recording_stopped` is 1). At most `MAX_QUEUED` objects wait for
the store; a batch that finds the queue full is dropped, and a write that fails loses its batch:
each is a metric and a log line, never a request's delay or failure. Records are redacted one at a
time, each within `redaction_seconds`: a `--redact-pattern` that backtracks for longer costs its
record (`redaction_failed`) and the redaction process, which is killed and started again."""

from __future__ import annotations

import asyncio
import functools
import multiprocessing
import random
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Protocol

import structlog
from prometheus_client import CollectorRegistry, Counter, Gauge

from modelgate.api.object_url import ObjectUrl
from modelgate.chat_answers import Answer
from modelgate.recordings import object_name
from modelgate.sidecar.answer_reader import ByteBudget
from modelgate.sidecar.record import record_line
from modelgate.sidecar.redaction import Redactor
from modelgate.storage import ObjectStore

log = structlog.get_logger(__name__)

# Objects waiting for the store besides the one being written: however slow the store, memory
# stays within (MAX_QUEUED + 2) * object_bytes.
MAX_QUEUED = 4
# The copies of the requests being recorded hold at most this many objects' bytes at once.
COPIES = 4
# How long closing waits for the last writes (the Pod's grace period is 30 s by default).
CLOSE_TIMEOUT = 10.0
# A record's redaction takes milliseconds (a MiB of hostile text for the built-in patterns, 280 ms).
REDACTION_SECONDS = 2.0


class RedactionTimedOut(Exception):
    """A record's redaction ran past its time limit; its process was killed."""


class RecordSink(Protocol):
    async def put(self, name: str, body: bytes) -> None:
        """Writes one object `name` under the sink's prefix; raises on failure."""


class DirectorySink:
    """Objects as files in a local directory (tests, or a volume mounted in the Pod)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    async def put(self, name: str, body: bytes) -> None:
        await asyncio.to_thread(self._write, name, body)

    def _write(self, name: str, body: bytes) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        partial = self.root / f".{name}.partial"
        partial.write_bytes(body)
        partial.rename(self.root / name)  # a reader never sees half an object


@dataclass(frozen=True)
class RecordingSettings:
    sink: RecordSink
    sink_name: str  # where the sink writes, for logs
    rate: float  # 0 < rate <= 1: the share of completion requests recorded
    max_bytes: int  # in total, over the process's life
    object_bytes: int = 1024 * 1024
    batch_requests: int = 100
    batch_seconds: float = 60.0
    redactor: Redactor = field(default_factory=Redactor.with_built_ins)
    source: str = "proxy"  # the Pod's name, in object names
    redaction_seconds: float = REDACTION_SECONDS  # for one record, before its process is killed
    seed: int | None = None  # fixed in tests; None draws from the system


class Outcome(StrEnum):
    WRITTEN = "written"
    OVER_TOTAL_BYTES = "over_total_bytes"
    TOO_LARGE = "too_large"
    UNREADABLE = "unreadable"
    NOT_ANSWERED = "not_answered"
    REDACTION_BUSY = "redaction_busy"
    REDACTION_FAILED = "redaction_failed"
    STORE_BUSY = "store_busy"
    STORE_FAILED = "store_failed"


class RecordingMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.records = Counter(
            "llm_recording_records",
            "Requests drawn by what became of them: written, or dropped (over_total_bytes, too_large, "
            "unreadable, not_answered, redaction_busy, redaction_failed, store_busy, store_failed)",
            ["outcome"],
            registry=registry,
        )
        self.drawn = Counter(
            "llm_recording_drawn_requests",
            "Completion requests drawn to be recorded; each ends in one llm_recording_records_total outcome",
            registry=registry,
        )
        self.bytes = Counter(
            "llm_recording_written_bytes",
            "Bytes of recorded requests written to the store",
            registry=registry,
        )
        self.stopped = Gauge(
            "llm_recording_stopped",
            "1 once --record-max-bytes is reached and recording stopped",
            registry=registry,
        )
        for outcome in Outcome:
            self.records.labels(outcome.value)


class RequestTee:
    """A copy of a drawn request's body as it passes, up to `limit` bytes and while the copies of
    all requests being recorded fit in `budget`; beyond either, no copy. `release()` (or `body()`)
    gives its bytes back to the budget."""

    def __init__(self, limit: int, budget: ByteBudget) -> None:
        self._chunks: list[bytes] = []
        self._size = 0
        self._limit = limit
        self._budget = budget
        self._dropped = False

    def feed(self, chunk: bytes) -> None:
        if self._dropped:
            return
        if self._size + len(chunk) > self._limit or not self._budget.take(len(chunk)):
            self._dropped = True
            self.release()
            return
        self._size += len(chunk)
        self._chunks.append(chunk)

    def body(self) -> bytes | None:
        body = None if self._dropped else b"".join(self._chunks)
        self.release()
        return body

    def release(self) -> None:
        self._budget.give(self._size)
        self._chunks.clear()
        self._size = 0


class Recorder:
    def __init__(
        self,
        settings: RecordingSettings,
        metrics: RecordingMetrics,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.settings = settings
        self.metrics = metrics
        self._clock = clock
        self._draw = random.Random(settings.seed)
        self._batch: list[bytes] = []
        self._batch_size = 0
        self._accepted = 0
        self._sequence = 0
        self._stopped = False
        self._queue: asyncio.Queue[tuple[str, list[bytes]] | None] = asyncio.Queue(MAX_QUEUED)
        self._tasks: tuple[asyncio.Task[None], asyncio.Task[None]] | None = None
        self._redaction = _redaction_pool()
        # Hands records to the process one at a time, each within its time limit; a thread that only
        # waits, so that records queue up without the event loop's turn between them.
        self._dispatch = ThreadPoolExecutor(max_workers=1, thread_name_prefix="redaction")
        self._copies = ByteBudget(COPIES * settings.object_bytes)
        self._redacting: set[asyncio.Future[bytes | None]] = set()
        self._redacting_bytes = 0

    def sampled(self) -> RequestTee | None:
        """A tee for the request's body when this request is drawn, else None."""
        if self._stopped or self._draw.random() >= self.settings.rate:
            return None
        self.metrics.drawn.inc()
        return RequestTee(self.settings.object_bytes, self._copies)

    def unanswered(self, tee: RequestTee) -> None:
        """A request drawn that the server did not answer with 200: not recorded."""
        tee.release()
        self._count(Outcome.NOT_ANSWERED)

    def offer(self, tee: RequestTee, answer: Answer | None) -> None:
        """The answered request, to be redacted into its record and added to the batch if it fits.
        At most `object_bytes` of requests wait for redaction; more are dropped (`redaction_busy`)."""
        body = tee.body()
        if body is None:
            self._count(Outcome.TOO_LARGE)
            return
        if self._redacting_bytes + len(body) > self.settings.object_bytes:
            self._count(Outcome.REDACTION_BUSY)
            return
        self._redacting_bytes += len(body)
        redacted = asyncio.get_running_loop().run_in_executor(
            self._dispatch, self._redacted_within_limit, body, answer, self._clock()
        )
        self._redacting.add(redacted)
        redacted.add_done_callback(functools.partial(self._redacted, len(body)))

    def _redacted_within_limit(
        self, body: bytes, answer: Answer | None, recorded_at: datetime
    ) -> bytes | None:
        """The record, redacted in the pool's process (in the dispatch thread); a process that takes
        longer than the limit is killed, and one that took longer or died (killed for memory?) is
        replaced before the next record."""
        pool = self._redaction
        running = pool.submit(record_line, body, answer, recorded_at, self.settings.redactor)
        try:
            return running.result(timeout=self.settings.redaction_seconds)
        except TimeoutError:
            self._redaction = _redaction_pool()
            _killed(pool)
            limit = self.settings.redaction_seconds
            raise RedactionTimedOut(f"a record took over {limit} s; its process was killed") from None
        except BrokenProcessPool:
            self._redaction = _redaction_pool()
            raise

    def _redacted(self, size: int, redacted: asyncio.Future[bytes | None]) -> None:
        self._redacting.discard(redacted)
        self._redacting_bytes -= size
        if redacted.cancelled():
            return
        error = redacted.exception()
        if error is None:
            self._add(redacted.result())
            return
        self._count(Outcome.REDACTION_FAILED)
        log.warning("recording: redaction failed", error=str(error) or type(error).__name__)

    def _add(self, line: bytes | None) -> None:
        if line is None:
            self._count(Outcome.UNREADABLE)
        elif len(line) > self.settings.object_bytes:
            self._count(Outcome.TOO_LARGE)
        elif self._stopped or self._accepted + len(line) > self.settings.max_bytes:
            self._stop()
        else:
            if self._batch_size + len(line) > self.settings.object_bytes:
                self.flush()
            self._accepted += len(line)
            self._batch.append(line)
            self._batch_size += len(line)
            if len(self._batch) >= self.settings.batch_requests:
                self.flush()

    def flush(self) -> None:
        """Queues the batch as one object for the writer, unless the queue is full."""
        if not self._batch:
            return
        batch, self._batch, self._batch_size = self._batch, [], 0
        self._sequence += 1
        # Named at the time of the flush: no record in it is newer (recordings.object_name).
        name = object_name(self._clock(), self.settings.source, self._sequence)
        try:
            self._queue.put_nowait((name, batch))
        except asyncio.QueueFull:
            self._count(Outcome.STORE_BUSY, len(batch))
            log.warning("recording: batch dropped, the store is behind", records=len(batch))

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._redaction, _ready)  # forked now, before the proxy has threads
        self._tasks = (loop.create_task(self._flush_periodically()), loop.create_task(self._write_queued()))

    async def close(self) -> None:
        """Writes what is left, for at most CLOSE_TIMEOUT, and stops."""
        if self._tasks is None:
            return
        timer, writer = self._tasks
        self._tasks = None
        timer.cancel()
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                await asyncio.gather(*self._redacting, return_exceptions=True)
                self.flush()
                await self._queue.put(None)  # the writer's last item
                await writer
        except TimeoutError:
            writer.cancel()
            log.warning("recording: closed before the store took every object", timeout=CLOSE_TIMEOUT)
        await asyncio.to_thread(self._dispatch.shutdown, wait=True, cancel_futures=True)
        await asyncio.to_thread(self._redaction.shutdown, wait=True, cancel_futures=True)

    async def _flush_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.settings.batch_seconds)
            self.flush()

    async def _write_queued(self) -> None:
        while (queued := await self._queue.get()) is not None:
            await self._write(*queued)

    async def _write(self, name: str, batch: list[bytes]) -> None:
        body = b"".join(batch)
        try:
            await self.settings.sink.put(name, body)
        except Exception as error:  # any store failure costs the batch, never the proxy
            self._count(Outcome.STORE_FAILED, len(batch))
            log.warning(
                "recording: writing a batch failed",
                sink=self.settings.sink_name,
                object=name,
                records=len(batch),
                error=str(error) or type(error).__name__,
            )
            return
        self._count(Outcome.WRITTEN, len(batch))
        self.metrics.bytes.inc(len(body))

    def _stop(self) -> None:
        self._count(Outcome.OVER_TOTAL_BYTES)
        if not self._stopped:
            self._stopped = True
            self.metrics.stopped.set(1)
            log.warning("recording stopped: --record-max-bytes reached", max_bytes=self.settings.max_bytes)

    def _count(self, outcome: Outcome, records: int = 1) -> None:
        self.metrics.records.labels(outcome.value).inc(records)


def _redaction_pool() -> ProcessPoolExecutor:
    """Redaction's process. Not a thread: a regular expression holds the interpreter's lock for its
    whole search, and a MiB of hostile text stalled the event loop, and every proxied byte, for up
    to 280 ms (measured); in a process of its own, the proxy waits only for the copy."""
    return ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("fork"))


def _killed(pool: ProcessPoolExecutor) -> None:
    """The pool's process ended mid-search and the pool shut down (Python 3.11's pool has no call to
    end its processes; 3.14's is kill_workers)."""
    for process in list((pool._processes or {}).values()):
        process.kill()
    pool.shutdown(wait=False, cancel_futures=True)


def _ready() -> None:
    """A task that only starts the pool's process."""


class ObjectStoreSink:
    """Objects under an s3:// prefix (modelgate.storage)."""

    def __init__(self, store: ObjectStore, prefix: ObjectUrl) -> None:
        self.store = store
        self.prefix = prefix

    async def put(self, name: str, body: bytes) -> None:
        await self.store.write(self.prefix.child(name), body)
