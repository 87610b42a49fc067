"""The HTTP side of `modelgate eval`: chat completions with bounded concurrency and retries.

The HTTP side of `modelgate eval`: OpenAI-compatible chat completions, whole or streamed, with
bounded concurrency per endpoint, a timeout per attempt and retries with exponential backoff; and
reading a test set or replay file from a path or an http(s) URL.

Every URL is the tenant's: each is held to the egress policy (its syntax and a literal IP before the
request, every address a name resolves to when a connection is made), no redirect is followed, and
a local file must resolve inside the directories given (the Job's mounts).

aiohttp rather than a thread pool: it is already the project's HTTP client, one event loop holds
hundreds of requests in flight at the cost of a semaphore each, and a timeout or Ctrl-C cancels them
cleanly."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import structlog

from modelgate.api.addresses import AddressRefused, EgressPolicy
from modelgate.chat_answers import answer_from_json
from modelgate.evaluator.jsonl import InputError
from modelgate.evaluator.scoring import Reply
from modelgate.evaluator.storage_io import is_stored, read_stored
from modelgate.evaluator.streaming import ChatStream, StreamError
from modelgate.evaluator.usage import STREAM_OPTIONS, answer_output_tokens

log = structlog.get_logger(__name__)

EVENT_STREAM = "text/event-stream"

# Worth another attempt: the server was busy or broken for a moment (429, 5xx), or no answer came.
_TRANSIENT_ERRORS = (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, TimeoutError)


@dataclass(frozen=True)
class Endpoint:
    role: str  # candidate, incumbent or judge: for messages, never sent to a judge
    base_url: str  # ending in /v1, as OpenAI clients take it
    model: str | None = None


@dataclass(frozen=True)
class RequestPolicy:
    concurrency: int = 8  # requests in flight per endpoint
    timeout_seconds: float = 30.0  # per attempt
    retries: int = 2  # attempts after the first
    backoff_seconds: float = 0.5  # before the first retry; doubled for each next one


class Unreachable(Exception):
    """An endpoint that gave no HTTP answer at all, after every retry, or that may not be asked."""


class ChatClient:
    def __init__(self, session: aiohttp.ClientSession, policy: RequestPolicy, egress: EgressPolicy) -> None:
        self._session = session
        self._policy = policy
        self._egress = egress
        self._slots: dict[str, asyncio.Semaphore] = {}

    async def probe(self, endpoint: Endpoint) -> None:
        """Any HTTP answer to GET {base}/models, even an error status, shows the server is there."""
        url = f"{endpoint.base_url.rstrip('/')}/models"
        problem = ""
        for attempt in range(self._policy.retries + 1):
            try:
                self._egress.check_url(url)
                async with self._session.get(url, timeout=self._timeout(), allow_redirects=False) as response:
                    await response.read()
                    return
            except AddressRefused as refused:  # never the URL: it may hold a password
                raise Unreachable(f"the {endpoint.role} endpoint is refused: its URL {refused}") from None
            except _TRANSIENT_ERRORS as error:
                problem = _describe(error)
                await self._back_off(attempt)
        raise Unreachable(
            f"the {endpoint.role} endpoint {endpoint.base_url} did not answer "
            f"{self._policy.retries + 1} attempts: {problem}"
        )

    async def complete(
        self,
        endpoint: Endpoint,
        messages: Sequence[Mapping[str, Any]],
        *,
        model: str | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stream: bool = False,
    ) -> Reply:
        """With `stream`, asks for server-sent events and reads the answer from them, as a client
        that streamed in production did, and for a last chunk with the usage (its output tokens)."""
        body: dict[str, Any] = {"messages": list(messages)}
        optional = {"model": model or endpoint.model, "max_tokens": max_tokens, "temperature": temperature}
        body.update({key: value for key, value in optional.items() if value is not None})
        if stream:
            body.update(stream=True, stream_options=STREAM_OPTIONS)
        url = f"{endpoint.base_url.rstrip('/')}/chat/completions"
        async with self._slot(endpoint):
            reply = Reply(None, error="not attempted")
            for attempt in range(self._policy.retries + 1):
                reply, transient = await self._attempt(url, body, stream)
                if not transient:
                    return reply
                log.debug("chat request failed", endpoint=endpoint.role, attempt=attempt, error=reply.error)
                await self._back_off(attempt)
            return reply

    async def _attempt(self, url: str, body: Mapping[str, Any], stream: bool) -> tuple[Reply, bool]:
        """The reply and whether its failure is worth another attempt."""
        started = time.perf_counter()
        try:
            async with self._session.post(
                url, json=body, timeout=self._timeout(), allow_redirects=False
            ) as response:
                if stream and response.status == 200:
                    return await _streamed_reply(response, started)
                payload = await response.read()
                status = response.status
        except _TRANSIENT_ERRORS as error:
            return Reply(None, error=_describe(error)), True
        except AddressRefused as refused:  # a name that now resolves elsewhere
            return Reply(None, error=f"refused: {refused}"), False
        latency = time.perf_counter() - started
        if status != 200:
            return Reply(None, error=f"HTTP {status}"), status == 429 or status >= 500
        answer = answer_from_json(payload)
        if answer is None or not answer.choices:
            return Reply(None, error="the answer is not a chat completion"), False
        choice = answer.choices[0]
        return Reply(
            choice.text, choice.finish_reason, latency, output_tokens=answer_output_tokens(payload)
        ), False

    def _slot(self, endpoint: Endpoint) -> asyncio.Semaphore:
        return self._slots.setdefault(endpoint.base_url, asyncio.Semaphore(self._policy.concurrency))

    def _timeout(self) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(total=self._policy.timeout_seconds)

    async def _back_off(self, attempt: int) -> None:
        if attempt < self._policy.retries:
            await asyncio.sleep(self._policy.backoff_seconds * 2**attempt)


async def _streamed_reply(response: aiohttp.ClientResponse, started: float) -> tuple[Reply, bool]:
    """The reply read from a 200 stream and whether its failure is worth another attempt; a
    connection broken mid-stream raises, as in any attempt. The latency is to the end of the stream,
    as a whole answer's is to its last byte, and the time to the first piece of content is kept."""
    if response.content_type != EVENT_STREAM:
        # A server that ignores `stream` answers whole: not what production was sent, so no answer.
        return Reply(None, error=f"asked to stream, the server answered {response.content_type}"), False
    stream = ChatStream()
    first_token_seconds: float | None = None
    try:
        async for data in response.content.iter_any():
            stream.feed(data)
            if first_token_seconds is None and stream.has_content:
                first_token_seconds = time.perf_counter() - started
        text, finish_reason = stream.answer()
    except StreamError as error:
        return Reply(None, error=str(error)), error.transient
    latency = time.perf_counter() - started
    reply = Reply(
        text,
        finish_reason,
        latency,
        first_token_seconds=first_token_seconds,
        output_tokens=stream.output_tokens,
    )
    return reply, False


@dataclass(frozen=True)
class Sources:
    """Where inputs may come from: URLs the egress policy allows, and files inside `within` (any
    file when empty: a run from a command line)."""

    egress: EgressPolicy
    within: tuple[Path, ...] = ()
    # Where object storage credentials come from: the evaluator Job's environment, read by the CLI.
    environ: Mapping[str, str] = field(default_factory=dict)

    def local_file(self, source: str, option: str) -> Path:
        path = Path(source).resolve()  # symbolic links and '..' followed
        if self.within and not any(path.is_relative_to(root.resolve()) for root in self.within):
            raise InputError(f"{option}: the file is outside the volume it was given from")
        return path


async def read_source(
    session: aiohttp.ClientSession, source: str, option: str, timeout_seconds: float, sources: Sources
) -> str:
    """The text of a file path, an http(s) URL (a ConfigMap mounted as a volume is a file) or an
    s3:// object."""
    if is_stored(source):
        return await read_stored(source, option, sources.egress, sources.environ)
    if source.startswith(("http://", "https://")):
        return await _download(session, source, option, timeout_seconds, sources.egress)
    path = sources.local_file(source, option)
    try:
        return await asyncio.to_thread(path.read_text, encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(f"{option} {source}: cannot be read: {_describe(error)}") from None


async def _download(
    session: aiohttp.ClientSession, url: str, option: str, timeout_seconds: float, egress: EgressPolicy
) -> str:
    """The body of a 200 answer; the errors name the option and the failure, never the URL (it may
    hold a password) nor what another status's body said."""
    try:
        egress.check_url(url)
        timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        async with session.get(url, timeout=timeout, allow_redirects=False) as response:
            if response.status != 200:
                raise InputError(f"{option}: the URL answered HTTP {response.status}")
            return await response.text()
    except AddressRefused as refused:
        raise InputError(f"{option}: refused: the URL {refused}") from None
    except (OSError, UnicodeDecodeError, aiohttp.ClientError, TimeoutError) as error:
        raise InputError(f"{option}: the URL cannot be read: {_describe(error)}") from None


def _describe(error: BaseException) -> str:
    return str(error) or type(error).__name__
