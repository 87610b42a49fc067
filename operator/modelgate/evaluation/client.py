"""The HTTP side of `modelgate eval`: OpenAI-compatible chat completions with bounded concurrency per
endpoint, a timeout per attempt and retries with exponential backoff; and reading a test set or
replay file from a path or an http(s) URL.

aiohttp rather than a thread pool: it is already the project's HTTP client, one event loop holds
hundreds of requests in flight at the cost of a semaphore each, and a timeout or Ctrl-C cancels them
cleanly."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import structlog

from modelgate.evaluation.jsonl import InputError
from modelgate.evaluation.scoring import Reply
from modelgate.sidecar.answers import answer_from_json

log = structlog.get_logger(__name__)

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
    """An endpoint that gave no HTTP answer at all, after every retry."""


class ChatClient:
    def __init__(self, session: aiohttp.ClientSession, policy: RequestPolicy) -> None:
        self._session = session
        self._policy = policy
        self._slots: dict[str, asyncio.Semaphore] = {}

    async def probe(self, endpoint: Endpoint) -> None:
        """Any HTTP answer to GET {base}/models, even an error status, shows the server is there."""
        url = f"{endpoint.base_url.rstrip('/')}/models"
        problem = ""
        for attempt in range(self._policy.retries + 1):
            try:
                async with self._session.get(url, timeout=self._timeout()) as response:
                    await response.read()
                    return
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
    ) -> Reply:
        body: dict[str, Any] = {"messages": list(messages)}
        optional = {"model": model or endpoint.model, "max_tokens": max_tokens, "temperature": temperature}
        body.update({key: value for key, value in optional.items() if value is not None})
        url = f"{endpoint.base_url.rstrip('/')}/chat/completions"
        async with self._slot(endpoint):
            reply = Reply(None, error="not attempted")
            for attempt in range(self._policy.retries + 1):
                reply, transient = await self._attempt(url, body)
                if not transient:
                    return reply
                log.debug("chat request failed", endpoint=endpoint.role, attempt=attempt, error=reply.error)
                await self._back_off(attempt)
            return reply

    async def _attempt(self, url: str, body: Mapping[str, Any]) -> tuple[Reply, bool]:
        """The reply and whether its failure is worth another attempt."""
        started = time.perf_counter()
        try:
            async with self._session.post(url, json=body, timeout=self._timeout()) as response:
                payload = await response.read()
                status = response.status
        except _TRANSIENT_ERRORS as error:
            return Reply(None, error=_describe(error)), True
        latency = time.perf_counter() - started
        if status != 200:
            return Reply(None, error=f"HTTP {status}"), status == 429 or status >= 500
        answer = answer_from_json(payload)
        if answer is None or not answer.choices:
            return Reply(None, error="the answer is not a chat completion"), False
        choice = answer.choices[0]
        return Reply(choice.text, choice.finish_reason, latency), False

    def _slot(self, endpoint: Endpoint) -> asyncio.Semaphore:
        return self._slots.setdefault(endpoint.base_url, asyncio.Semaphore(self._policy.concurrency))

    def _timeout(self) -> aiohttp.ClientTimeout:
        return aiohttp.ClientTimeout(total=self._policy.timeout_seconds)

    async def _back_off(self, attempt: int) -> None:
        if attempt < self._policy.retries:
            await asyncio.sleep(self._policy.backoff_seconds * 2**attempt)


async def read_source(
    session: aiohttp.ClientSession, source: str, option: str, timeout_seconds: float
) -> str:
    """The text of a file path or an http(s) URL (a ConfigMap mounted as a volume is a file)."""
    try:
        if source.startswith(("http://", "https://")):
            timeout = aiohttp.ClientTimeout(total=timeout_seconds)
            async with session.get(source, timeout=timeout) as response:
                if response.status != 200:
                    raise InputError(f"{option} {source}: HTTP {response.status}")
                return await response.text()
        return await asyncio.to_thread(Path(source).read_text, encoding="utf-8")
    except (OSError, UnicodeDecodeError, aiohttp.ClientError, TimeoutError) as error:
        raise InputError(f"{option} {source}: cannot be read: {_describe(error)}") from None


def _describe(error: BaseException) -> str:
    return str(error) or type(error).__name__
