"""The refusal proxy's I/O: requests and responses passed through, answers counted.

Every request goes upstream and every response comes back byte for byte, as it arrives; the completion
endpoints' answers are read on the way (see `answers`) and counted in `llm_requests_total` and
`llm_refusals_total`, served on a port of their own so that the server's /metrics stays reachable.

Bounded whatever clients and the server do: memory (`chat_answers` keeps a bounded part of each answer,
JSON answers share one `ByteBudget`), the `model` label's values (`ModelLabels`), connections and
the time their headers take (`connections`), and the time the server may stay silent."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field, replace
from http import HTTPStatus

import aiohttp
import structlog
from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy
from prometheus_client import CollectorRegistry, Counter, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from yarl import URL

from modelgate.chat_answers import TextLimits
from modelgate.refusal_classifier import RefusalPatterns, RefusalReason, classify
from modelgate.sidecar.answer_reader import AnswerReader, ByteBudget
from modelgate.sidecar.connections import ConnectionGuard, ConnectionLimits, GuardedSite
from modelgate.sidecar.recording import Recorder, RecordingMetrics, RecordingSettings, RequestTee

log = structlog.get_logger(__name__)

COMPLETION_ENDPOINTS = ("/v1/chat/completions", "/v1/completions")
EVENT_STREAM = "text/event-stream"
# nginx's code for "the client closed the connection before the answer was complete".
CLIENT_CLOSED = "499"
UNKNOWN_MODEL = "unknown"
# The `model` label of every name past the label set (`ModelLabels`).
OTHER_MODEL = "other"
# Longer names are counted as `other`: a label value is exported on every scrape.
MAX_MODEL_NAME = 128
# /metrics and /healthz: Prometheus and the kubelet's probes.
METRICS_CONNECTIONS = 16
# Connection-level headers (RFC 9110, section 7.6.1) belong to one hop; `host` is the upstream's.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "expect",
        "host",
    }
)
# A server that takes longer than this to accept a connection is down.
_CONNECT_TIMEOUT = 10


@dataclass(frozen=True)
class ProxySettings:
    upstream: URL
    patterns: RefusalPatterns
    # Model names whose series exist (at 0) from the start and, if any, the only `model` labels.
    models: tuple[str, ...] = ()
    # Without `models`, how many names answered become labels (the rest: `other`).
    max_model_labels: int = 8
    # JSON answers larger than this are passed on but not classified.
    max_classified_bytes: int = 4 * 1024 * 1024
    # All JSON answers being read hold at most this much at once; beyond it, passed on unclassified.
    max_buffered_bytes: int = 64 * 1024 * 1024
    # How much of each choice's text is classified, streamed or not.
    text_limits: TextLimits = field(default_factory=TextLimits)
    connections: ConnectionLimits = field(default_factory=ConnectionLimits)
    # Seconds the server may stay silent (before its headers, between chunks): an answer that is
    # not streamed arrives only when complete.
    upstream_read_timeout: float = 300.0
    # Off (None) by default: a sample of requests and answers, redacted, written to a store.
    recording: RecordingSettings | None = None


class ModelLabels:
    """The values of the `model` label: the names given, if any, else the first `limit` names
    answered; every other name is `other`. A server may echo the model name a client sent, so the
    series must not grow with what clients send."""

    def __init__(self, named: Iterable[str], limit: int) -> None:
        self._known = list(dict.fromkeys(named))
        self._open = not self._known
        self._limit = limit

    @property
    def known(self) -> tuple[str, ...]:
        return tuple(self._known)

    def of(self, name: str) -> str:
        if name in self._known:
            return name
        if not self._open or len(self._known) >= self._limit or len(name) > MAX_MODEL_NAME:
            return OTHER_MODEL
        self._known.append(name)
        return name


class RefusalMetrics:
    """The proxy's counters, in a registry of their own."""

    def __init__(self, models: Iterable[str], max_model_labels: int = ProxySettings.max_model_labels) -> None:
        self.registry = CollectorRegistry()
        # prometheus_client adds `_total` on exposition.
        self._requests = Counter(
            "llm_requests",
            "Requests to the completion endpoints, by the model that answered and the HTTP code sent "
            "(499: the client left before the answer was complete)",
            ["model", "endpoint", "code"],
            registry=self.registry,
        )
        self._refusals = Counter(
            "llm_refusals",
            "Answers classified as refusals: content_filter (finish_reason) or pattern (the text)",
            ["model", "reason"],
            registry=self.registry,
        )
        self._labels = ModelLabels(models, max_model_labels)
        self._known: set[str] = set()
        for model in self._labels.known:
            self._know(model)

    def count(self, answered: str, endpoint: str, code: str, refusal: RefusalReason | None) -> None:
        model = self._labels.of(answered)
        self._know(model)
        self._requests.labels(model, endpoint, code).inc()
        if refusal is not None:
            self._refusals.labels(model, refusal.value).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)

    def _know(self, model: str) -> None:
        """Series at 0 before the first refusal: otherwise a refusal rate has no data until then."""
        if model in self._known:
            return
        self._known.add(model)
        for reason in RefusalReason:
            self._refusals.labels(model, reason.value)
        for endpoint in COMPLETION_ENDPOINTS:
            self._requests.labels(model, endpoint, str(HTTPStatus.OK.value))


class RefusalProxy:
    def __init__(self, settings: ProxySettings, metrics: RefusalMetrics) -> None:
        self.settings = settings
        self.metrics = metrics
        self._session: aiohttp.ClientSession | None = None
        self._json_budget = ByteBudget(settings.max_buffered_bytes)
        self._recorder = (
            Recorder(settings.recording, RecordingMetrics(metrics.registry)) if settings.recording else None
        )

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{path:.*}", self.forward)
        app.on_startup.append(self._open)
        app.on_cleanup.append(self._close)
        return app

    def metrics_app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        return app

    async def forward(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None, "the application has not started"
        endpoint = request.path if request.method == "POST" and request.path in COMPLETION_ENDPOINTS else None
        url = URL(str(self.settings.upstream).rstrip("/") + request.rel_url.raw_path_qs, encoded=True)
        tee = self._recorder.sampled() if self._recorder is not None and endpoint is not None else None
        body = _teed(request.content, tee) if tee is not None else request.content
        try:
            upstream = await self._session.request(
                request.method,
                url,
                headers=_end_to_end(request.headers),
                data=body if request.body_exists else None,
                allow_redirects=False,
            )
        except (aiohttp.ClientError, TimeoutError) as error:
            status = _gateway_status(error)
            log.warning("upstream unreachable or silent", url=str(url), error=_describe(error))
            if endpoint is not None:
                self._count(endpoint, str(status.value), None, tee)
            return web.json_response(_gateway_error(status, error), status=status)
        except asyncio.CancelledError:  # the client left before the server began to answer
            if endpoint is not None:
                self._count(endpoint, CLIENT_CLOSED, None, tee)
            raise
        async with upstream:
            return await self._relay(request, upstream, endpoint, tee)

    async def _relay(
        self,
        request: web.Request,
        upstream: aiohttp.ClientResponse,
        endpoint: str | None,
        tee: RequestTee | None = None,
    ) -> web.StreamResponse:
        response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
        response.headers.extend(_end_to_end(upstream.headers))
        reader = self._reader(upstream) if endpoint is not None else None
        code = str(upstream.status)
        try:
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                if reader is not None:
                    reader.feed(chunk)
                await response.write(chunk)
            await response.write_eof()
        except ConnectionResetError:  # a write to the client failed
            code = _client_left(request, upstream)
        except asyncio.CancelledError:  # aiohttp cancels the handler of a client that left
            code = _client_left(request, upstream)
            raise
        except (aiohttp.ClientError, TimeoutError) as error:  # the server broke off or went silent
            code = str(_gateway_status(error).value)
            log.warning("upstream broke off", path=request.path, error=_describe(error))
            # Close rather than end the body: the client must not take a partial answer for a whole one.
            if request.transport is not None:
                request.transport.close()
        finally:
            if endpoint is not None:
                self._count(endpoint, code, reader, tee)
        return response

    def _reader(self, upstream: aiohttp.ClientResponse) -> AnswerReader | None:
        if upstream.status != HTTPStatus.OK:
            return None
        if upstream.headers.get("Content-Encoding", "identity") != "identity":
            log.warning(
                "compressed answer passed on unclassified", encoding=upstream.headers["Content-Encoding"]
            )
            return None
        return AnswerReader(
            upstream.content_type == EVENT_STREAM,
            self.settings.max_classified_bytes,
            self.settings.text_limits,
            self._json_budget,
        )

    def _count(
        self, endpoint: str, code: str, reader: AnswerReader | None, tee: RequestTee | None = None
    ) -> None:
        answer = reader.answer() if reader is not None else None
        if reader is not None:
            reader.release()
        if reader is not None and reader.over_limit:
            log.warning(
                "answer passed on unclassified: over the size limit or the shared budget",
                limit=self.settings.max_classified_bytes,
                budget=self.settings.max_buffered_bytes,
            )
        refusal = classify(answer, self.settings.patterns) if answer is not None else None
        model = self._model(answer.model if answer is not None else None)
        self.metrics.count(model, endpoint, code, refusal)
        log.debug("answer counted", model=model, endpoint=endpoint, code=code, refusal=refusal)
        if tee is not None and self._recorder is not None:
            if code == str(HTTPStatus.OK.value):
                self._recorder.offer(tee, answer)
            else:
                self._recorder.unanswered(tee)

    def _model(self, answered: str | None) -> str:
        return answered or next(iter(self.settings.models), UNKNOWN_MODEL)

    async def _metrics(self, _: web.Request) -> web.Response:
        return web.Response(
            body=self.metrics.exposition(), headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4}
        )

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _open(self, _: web.Application) -> None:
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0),  # as many concurrent answers as clients ask for
            timeout=aiohttp.ClientTimeout(
                total=None, sock_connect=_CONNECT_TIMEOUT, sock_read=self.settings.upstream_read_timeout
            ),
            auto_decompress=False,  # bytes pass through as the server sent them
            cookie_jar=aiohttp.DummyCookieJar(),  # one client's cookies are never sent for another
            skip_auto_headers=("Accept-Encoding", "User-Agent", "Content-Type"),
        )
        if self._recorder is not None:
            await self._recorder.start()

    async def _close(self, _: web.Application) -> None:
        if self._recorder is not None:
            await self._recorder.close()
        if self._session is not None:
            await self._session.close()


def _end_to_end(headers: CIMultiDictProxy[str]) -> CIMultiDict[str]:
    """The headers without the hop-by-hop ones, including those the Connection header names."""
    connection = {
        name.strip().lower() for value in headers.getall("Connection", []) for name in value.split(",")
    }
    dropped = _HOP_BY_HOP | connection
    return CIMultiDict((name, value) for name, value in headers.items() if name.lower() not in dropped)


async def _teed(content: aiohttp.StreamReader, tee: RequestTee) -> AsyncIterator[bytes]:
    """The request's body as it arrives, a copy kept for its record."""
    async for chunk in content.iter_any():
        tee.feed(chunk)
        yield chunk


def _client_left(request: web.Request, upstream: aiohttp.ClientResponse) -> str:
    # Closing the server's connection lets it stop generating, as it would for the client itself.
    upstream.close()
    log.info("client disconnected", path=request.path)
    return CLIENT_CLOSED


def _describe(error: BaseException) -> str:
    return str(error) or type(error).__name__  # a timeout's message is empty


def _gateway_status(error: BaseException) -> HTTPStatus:
    return HTTPStatus.GATEWAY_TIMEOUT if isinstance(error, TimeoutError) else HTTPStatus.BAD_GATEWAY


def _gateway_error(status: HTTPStatus, error: BaseException) -> dict[str, object]:
    # The error shape of OpenAI-compatible servers, so clients parse it like the server's own.
    problem = "did not answer in time" if status is HTTPStatus.GATEWAY_TIMEOUT else "is unreachable"
    message = f"refusal proxy: the model server {problem}: {_describe(error)}"
    kind = status.phrase.replace(" ", "")
    return {"object": "error", "message": message, "type": kind, "param": None, "code": status.value}


@dataclass
class RunningProxy:
    proxy: RefusalProxy
    runners: tuple[web.AppRunner, ...]
    host: str
    port: int
    metrics_port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def metrics_url(self) -> str:
        return f"http://{self.host}:{self.metrics_port}/metrics"

    async def close(self) -> None:
        for runner in self.runners:
            await runner.cleanup()


async def start_refusal_proxy(
    settings: ProxySettings, host: str, port: int, metrics_port: int
) -> RunningProxy:
    """Serves the proxy and its metrics; port 0 picks a free port (see the result)."""
    proxy = RefusalProxy(settings, RefusalMetrics(settings.models, settings.max_model_labels))
    limits = settings.connections
    guards = (ConnectionGuard(limits), ConnectionGuard(replace(limits, max_connections=METRICS_CONNECTIONS)))
    apps = (proxy.app(), proxy.metrics_app())
    runners = tuple(
        # Cancelled handlers: a client that leaves while the server is still answering is noticed at
        # once, not at the next write, and the server's connection is closed with it.
        web.AppRunner(app, access_log=None, handler_cancellation=True, keepalive_timeout=limits.idle_timeout)
        for app in apps
    )
    bound = []
    try:
        for app, runner, guard, wanted in zip(apps, runners, guards, (port, metrics_port), strict=True):
            app.middlewares.append(guard.track)
            await runner.setup()
            await GuardedSite(runner, host, wanted, guard).start()
            bound.append(runner.addresses[0][1])
    except OSError:
        for runner in runners:
            await runner.cleanup()
        raise
    log.info(
        "refusal proxy listening",
        host=host,
        port=bound[0],
        metrics_port=bound[1],
        upstream=str(settings.upstream),
        recording=settings.recording.sink_name if settings.recording else None,
    )
    return RunningProxy(proxy, runners, host, bound[0], bound[1])
