"""A test double of an LLM inference server: OpenAI-style chat completions, and the metric names
of one serving stack (`Behaviour.source`: vllm, sglang, tgi, triton, llm-d or istio; the exporters
are in testbed/exporters/, one module per stack), beside the counters of the refusal proxy that
would sit in its pod (`llm_requests_total`, `llm_refusals_total`).

A test sets failure, abort, refusal and latency knobs (`Behaviour`) at start, or changes them while
the double runs with `PUT /admin/behaviour`. `Behaviour.answers` makes it answer like a model version
of a configured quality per capability, and `Behaviour.judge` makes it a pairwise judge
(testbed/answering.py).

A request with `"stream": true` is answered with server-sent events as vLLM sends them: one chunk per
word, then (asked `stream_options.include_usage`) a usage chunk, then `data: [DONE]`. The usage
counts `tokens_per_word` tokens per word of the answer, as a tokenizer would. With `hold_streams`,
each stream stops after its first chunk until `POST /admin/release-streams`, so a test can see what
a client receives before the answer ends.

Latency is not slept by default: each answered request observes its *configured* timing in the
histograms and is answered at once, so a test can fake a slow tail in milliseconds. Set
`simulate_latency_sleep` to really wait. The timing of an answer is consistent: end-to-end latency
= time to first token + (output tokens - 1) x time per output token.

Outcomes are deterministic, not coin flips: over n requests exactly round(n * rate) take an
outcome (halves round up), spread evenly, so tests can assert exact counts. Aborts and refusals
are drawn from the requests that do not fail, scaled so that they stay shares of all requests, and
the tail latency from the answered ones.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import itertools
import json
import signal
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import cycle, islice
from typing import Any, Literal

import structlog
from aiohttp import web
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.openmetrics.exposition import CONTENT_TYPE_LATEST as CONTENT_TYPE_OPENMETRICS
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from modelgate.refusal_classifier import RefusalReason
from modelgate.sidecar.proxy import CLIENT_CLOSED, RefusalMetrics
from testbed.answering import Answerer, Answers, Judging, judge_verdict
from testbed.exporters import EXPORTERS, Answer, Exporter, Identity
from testbed.exporters.base import openmetrics_exposition
from testbed.request_traces import CURRENT_EXEMPLAR, RequestTraces, trace_id_of
from testbed.shares import EvenSpread, exact_rate

log = structlog.get_logger(__name__)

DOUBLE_ENTRY = "testbed.model_server_double:main"  # started by the fork server (testbed/forkserver.py)
DEFAULT_MODEL_NAME = "chat-model"
DEFAULT_NAMESPACE = "default"
CHAT_HANDLER = "/v1/chat/completions"
STOP_GRACE_SECONDS = 1.0
ANSWER = "This is a canned answer from the model server double, which only pretends to be a model."
REFUSAL = "I'm sorry, but I can't help with that."
# A content filter stops an answer after this many words.
FILTERED_AFTER_WORDS = 3
RefusalStyle = Literal["text", "content_filter"]
# How a request asked to be answered: whole, or streamed with or without a last usage chunk.
Streamed = Literal["whole", "streamed", "streamed with usage"]
WHOLE: Streamed = "whole"
STREAMED: Streamed = "streamed"
STREAMED_WITH_USAGE: Streamed = "streamed with usage"
Source = Literal["vllm", "sglang", "tgi", "triton", "llm-d", "istio"]


class Latency(BaseModel):
    """Per-request timing in seconds. End to end: `median` for most answered requests, or, with
    `tpot` set, `ttft` + (output tokens - 1) x `tpot`; `tail_latency` for a `tail_rate` share of
    them. `ttft` (time to first token) defaults to a tenth of the end-to-end latency; the time per
    output token follows from the others unless set."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    median: float = Field(default=0.2, ge=0)
    tail_rate: float = Field(default=0.0, ge=0, le=1)
    tail_latency: float = Field(default=0.0, ge=0)
    ttft: float | None = Field(default=None, ge=0)
    tpot: float | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _consistent(self) -> Latency:
        if self.tail_rate > 0 and self.tail_latency < self.median:
            raise ValueError("tail_latency must be at least median when tail_rate > 0")
        if self.tpot is not None and self.ttft is None:
            raise ValueError("tpot needs ttft: the end-to-end latency is ttft + (tokens - 1) x tpot")
        if self.ttft is not None and self.tpot is None and self.ttft > self.median:
            raise ValueError("ttft must not exceed median, the end-to-end latency")
        if self.ttft is not None and self.tail_rate > 0 and self.ttft > self.tail_latency:
            raise ValueError("ttft must not exceed tail_latency")
        return self

    def timing(self, tokens: int, slow: bool) -> tuple[float, float, float]:
        """(ttft, tpot, end to end) of an answer of `tokens` tokens, in the tail or not."""
        if slow:
            latency = self.tail_latency
        elif self.tpot is not None and self.ttft is not None:
            latency = self.ttft + (tokens - 1) * self.tpot
        else:
            latency = self.median
        ttft = self.ttft if self.ttft is not None else latency / 10
        tpot = (latency - ttft) / (tokens - 1) if tokens > 1 else 0.0
        return ttft, tpot, latency


class Behaviour(BaseModel):
    """The double's knobs. Rates are shares of all chat requests."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Source = Field(default="vllm", description="the serving stack whose metric names are exported")
    error_rate: float = Field(default=0.0, ge=0, le=1, description="answered HTTP 500")
    abort_rate: float = Field(default=0.0, ge=0, le=1, description="the client went away (answered 499)")
    refusal_rate: float = Field(default=0.0, ge=0, le=1, description="answered 200 with a refusal")
    refusal_style: RefusalStyle = Field(
        default="text",
        description="text: a refusal worded as one, finish_reason stop; content_filter: the start of "
        "an ordinary answer cut off with finish_reason content_filter",
    )
    latency: Latency = Latency()
    output_tokens: int = Field(default=20, ge=1, description="tokens of an answer (max_tokens may cut it)")
    tokens_per_word: int = Field(
        default=1,
        ge=1,
        description="its tokenizer's tokens per word of an answer, counted in usage and metrics",
    )
    requests_waiting: int = Field(default=0, ge=0, description="the stack's queue gauge")
    simulate_latency_sleep: bool = False
    hold_streams: bool = Field(default=False, description="streams wait after their first chunk")
    answers: Answers = Answers()
    judge: Judging | None = Field(default=None, description="answer every chat request as a pairwise judge")

    @model_validator(mode="after")
    def _rates_fit(self) -> Behaviour:
        if self.error_rate + self.abort_rate + self.refusal_rate > 1:
            raise ValueError("error_rate + abort_rate + refusal_rate must not exceed 1")
        return self


Drawn = Literal["error", "abort", "refusal"]


@dataclass(frozen=True)
class Outcome:
    kind: Literal["error", "abort", "refusal", "answer"]
    slow: bool = False  # in the latency tail


class OutcomePlanner:
    """Decides each request's fate from the behaviour; pure apart from its own spread state."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        remaining = Fraction(1)
        rates: tuple[tuple[Drawn, float], ...] = (
            ("error", behaviour.error_rate),
            ("abort", behaviour.abort_rate),
            ("refusal", behaviour.refusal_rate),
        )
        self._spreads: list[tuple[Drawn, EvenSpread]] = []
        # Each outcome is drawn from the requests the ones before left, scaled to stay a share of all.
        for kind, rate in rates:
            share = exact_rate(rate)
            self._spreads.append((kind, EvenSpread(share / remaining if remaining > 0 else Fraction(0))))
            remaining -= share
        self._tail = EvenSpread(exact_rate(behaviour.latency.tail_rate))

    def next(self) -> Outcome:
        for kind, spread in self._spreads:
            if spread.next():
                if kind == "refusal":
                    return Outcome(kind, slow=self._tail.next())
                return Outcome(kind)
        return Outcome("answer", slow=self._tail.next())


class ModelServerDouble:
    """The double's state and its aiohttp application."""

    def __init__(
        self,
        behaviour: Behaviour,
        model_name: str = DEFAULT_MODEL_NAME,
        namespace: str = DEFAULT_NAMESPACE,
        *,
        refusal_counters: bool = True,
    ) -> None:
        self.identity = Identity(model_name, namespace)
        self.model_name = model_name
        # What the refusal proxy in the model's pod would count (docs/refusal-sidecar.md), served
        # beside the stack's own series so that refusalRate has data on the bed; off when a real
        # proxy stands in front of the double and counts.
        self.proxied = RefusalMetrics([model_name]) if refusal_counters else None
        self._ids = itertools.count(1)
        self.behaviour = behaviour
        self._release = asyncio.Event()
        self._held = 0
        self.traces = RequestTraces()

    @property
    def behaviour(self) -> Behaviour:
        return self._planner.behaviour

    @behaviour.setter
    def behaviour(self, behaviour: Behaviour) -> None:
        # A fresh planner: counts after a change are exact for the new rates.
        if getattr(self, "_planner", None) is None or self.behaviour.source != behaviour.source:
            self.metrics: Exporter = EXPORTERS[behaviour.source](self.identity)
        answerer = Answerer(behaviour.answers, self.model_name)  # first: it may refuse the behaviour
        self._planner = OutcomePlanner(behaviour)
        self._answerer = answerer
        self.metrics.set_waiting(behaviour.requests_waiting)
        log.info("behaviour set", model_name=self.model_name, **behaviour.model_dump())

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post(CHAT_HANDLER, self._chat_completions)
        app.router.add_get("/v1/models", self._models)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/admin/behaviour", self._get_behaviour)
        app.router.add_put("/admin/behaviour", self._put_behaviour)
        app.router.add_post("/admin/release-streams", self._release_streams)
        app.router.add_get("/admin/traces", self._traces)
        return app

    async def _chat_completions(self, request: web.Request) -> web.StreamResponse:
        # Each request's trace ID (the caller's W3C traceparent, else a new one) is the exemplar of
        # the series it is counted in, and is recorded with its status for tests to compare.
        trace_id = trace_id_of(request.headers.get("traceparent"))
        CURRENT_EXEMPLAR.set({"trace_id": trace_id})  # this request's task only
        status, payload, streamed = await self._complete(request)
        self.traces.record(trace_id, status)
        headers = {"traceparent": self.traces.traceparent(trace_id)}
        if streamed != WHOLE and status == 200:
            return await self._stream(request, payload, headers, with_usage=streamed == STREAMED_WITH_USAGE)
        return web.json_response(payload, status=status, headers=headers)

    async def _complete(self, request: web.Request) -> tuple[int, dict[str, Any], Streamed]:
        try:
            body = await request.json()
            messages, max_tokens, streamed = _parse_chat_request(body)
            verdict = judge_verdict(self.behaviour.judge, messages) if self.behaviour.judge else None
        except ValueError as error:  # malformed JSON included
            return 400, _error_body(f"invalid request: {error}", "BadRequestError", 400), WHOLE
        outcome = self._planner.next()
        if outcome.kind == "error":
            self.metrics.failed()
            self._count_proxied("500", None)
            return (
                500,
                _error_body("injected failure (model server double)", "InternalServerError", 500),
                WHOLE,
            )
        if outcome.kind == "abort":
            # Stands for a client that went away; 499 is nginx's "client closed request".
            self.metrics.aborted()
            self._count_proxied(CLIENT_CLOSED, None)
            return (
                499,
                _error_body("injected client abort (model server double)", "ClientClosedRequest", 499),
                WHOLE,
            )
        refused = outcome.kind == "refusal"
        if refused:
            content, finish_reason = self._refusal()
        elif verdict is not None:
            content, finish_reason = verdict.value, "stop"
        else:
            content, finish_reason = self._answer(messages, max_tokens)
        tokens = len(content.split()) * self.behaviour.tokens_per_word
        ttft, tpot, latency = self.behaviour.latency.timing(tokens, outcome.slow)
        if self.behaviour.simulate_latency_sleep:
            await asyncio.sleep(latency)
        self.metrics.answered(Answer(ttft, tpot, tokens, latency, finish_reason))
        self._count_proxied("200", self._refusal_reason() if refused else None)
        return 200, self._completion(messages, content, finish_reason, tokens), streamed

    def _answer(self, messages: Sequence[Mapping[str, Any]], max_tokens: int | None) -> tuple[str, str]:
        """A test-set item's answer, or the canned answer signed by the version, `output_tokens`
        words; a smaller max_tokens cuts it, as a real model would."""
        known = self._answerer.answer(messages)
        if known is not None:
            return known, "stop"
        tokens = self.behaviour.output_tokens
        words = self._answerer.signed(list(islice(cycle(ANSWER.split()), tokens)))
        if max_tokens is not None and max_tokens < tokens:
            return " ".join(words[:max_tokens]), "length"
        return " ".join(words), "stop"

    def _count_proxied(self, code: str, refusal: RefusalReason | None) -> None:
        if self.proxied is not None:
            self.proxied.count(self.model_name, CHAT_HANDLER, code, refusal)

    def _refusal_reason(self) -> RefusalReason:
        if self.behaviour.refusal_style == "content_filter":
            return RefusalReason.CONTENT_FILTER
        return RefusalReason.PATTERN

    def _refusal(self) -> tuple[str, str]:
        if self.behaviour.refusal_style == "content_filter":
            return " ".join(ANSWER.split()[:FILTERED_AFTER_WORDS]), "content_filter"
        return REFUSAL, "stop"

    async def _stream(
        self,
        request: web.Request,
        completion: Mapping[str, Any],
        headers: Mapping[str, str],
        *,
        with_usage: bool,
    ) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache", **headers}
        )
        await response.prepare(request)
        release = self._release
        for number, chunk in enumerate(stream_chunks(completion, with_usage=with_usage)):
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            if number == 0 and self.behaviour.hold_streams:
                self._held += 1
                await release.wait()
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _release_streams(self, _: web.Request) -> web.Response:
        """Lets the streams held now go on; later ones are held again (while `hold_streams`)."""
        released, self._held = self._held, 0
        self._release.set()
        self._release = asyncio.Event()
        return web.json_response({"released": released})

    def _completion(
        self, messages: Sequence[Mapping[str, Any]], content: str, finish_reason: str, completion_tokens: int
    ) -> dict[str, Any]:
        prompt_tokens = sum(len(str(m.get("content", "")).split()) for m in messages)
        return {
            "id": f"chatcmpl-{next(self._ids):08x}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model_name,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": finish_reason,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    async def _models(self, _: web.Request) -> web.Response:
        model = {"id": self.model_name, "object": "model", "created": 0, "owned_by": "modelgate"}
        return web.json_response({"object": "list", "data": [model]})

    async def _metrics(self, request: web.Request) -> web.Response:
        if "application/openmetrics-text" in request.headers.get("Accept", ""):  # as Prometheus asks
            registries = [self.metrics.registry, *([self.proxied.registry] if self.proxied else [])]
            return web.Response(
                body=openmetrics_exposition(*registries), headers={"Content-Type": CONTENT_TYPE_OPENMETRICS}
            )
        return web.Response(
            body=self.metrics.exposition() + (self.proxied.exposition() if self.proxied else b""),
            headers={"Content-Type": CONTENT_TYPE_PLAIN_0_0_4},
        )

    async def _traces(self, request: web.Request) -> web.Response:
        """The trace IDs of the latest requests, with the HTTP status each was answered with."""
        return web.json_response(self.traces.as_json())

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _get_behaviour(self, _: web.Request) -> web.Response:
        return web.json_response(self.behaviour.model_dump(mode="json"))

    async def _put_behaviour(self, request: web.Request) -> web.Response:
        try:
            changes = await request.json()
        except ValueError as error:
            return web.json_response({"error": f"body is not JSON: {error}"}, status=400)
        if not isinstance(changes, dict):
            return web.json_response({"error": "body must be a JSON object of behaviour fields"}, status=400)
        try:
            self.behaviour = Behaviour.model_validate(_merged(self.behaviour.model_dump(), changes))
        except ValidationError as error:
            return web.json_response(_validation_body(error), status=400)
        except (OSError, ValueError) as error:  # a test set that cannot be read or used
            return web.json_response({"error": f"invalid behaviour: answers: {error}"}, status=400)
        return web.json_response(self.behaviour.model_dump(mode="json"))


def stream_chunks(completion: Mapping[str, Any], *, with_usage: bool = False) -> list[dict[str, Any]]:
    """A chat completion as vLLM streams it: the role, one chunk per word, then the finish reason,
    then `with_usage` (`stream_options.include_usage`) a chunk without choices carrying the usage."""
    (choice,) = completion["choices"]
    words = choice["message"]["content"].split(" ")
    deltas = [
        {"role": "assistant", "content": ""},
        *({"content": w if i == 0 else f" {w}"} for i, w in enumerate(words)),
    ]
    finish: list[str | None] = [*(None for _ in deltas), choice["finish_reason"]]
    head = {key: completion[key] for key in ("id", "created", "model")}
    chunks = [
        {
            **head,
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": reason}],
        }
        for delta, reason in zip([*deltas, {}], finish, strict=True)
    ]
    if with_usage:
        chunks.append(
            {**head, "object": "chat.completion.chunk", "choices": [], "usage": completion["usage"]}
        )
    return chunks


def _parse_chat_request(body: Any) -> tuple[list[dict[str, Any]], int | None, Streamed]:
    if not isinstance(body, dict):
        raise ValueError("body must be a JSON object")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages):
        raise ValueError("messages must be a non-empty list of objects")
    max_tokens = body.get("max_tokens")
    if max_tokens is not None and (not isinstance(max_tokens, int) or max_tokens < 1):
        raise ValueError("max_tokens must be a positive integer")
    streamed = body.get("stream", False)
    if not isinstance(streamed, bool):
        raise ValueError("stream must be true or false")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict) or not isinstance(options.get("include_usage", False), bool):
        raise ValueError("stream_options must be an object whose include_usage is true or false")
    if not streamed:
        return messages, max_tokens, WHOLE
    return messages, max_tokens, STREAMED_WITH_USAGE if options.get("include_usage") else STREAMED


def _error_body(message: str, error_type: str, code: int) -> dict[str, Any]:
    # The shape vLLM's OpenAI server answers errors with.
    return {"object": "error", "message": message, "type": error_type, "param": None, "code": code}


def _merged(base: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `changes` applied, recursing into nested objects (a partial update)."""
    merged = dict(base)
    for key, value in changes.items():
        current = merged.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            merged[key] = _merged(current, value)
        else:
            merged[key] = value
    return merged


def _validation_body(error: ValidationError) -> dict[str, Any]:
    fields = {".".join(str(part) for part in e["loc"]) or "behaviour": e["msg"] for e in error.errors()}
    summary = "; ".join(f"{name}: {message}" for name, message in fields.items())
    return {"error": f"invalid behaviour: {summary}", "fields": fields}


def require_loopback_host(host: str) -> str:
    """The double is for local tests only: it never listens beyond the machine."""
    try:
        if ipaddress.IPv4Address(host).is_loopback:
            return host
    except ValueError:
        pass
    raise ValueError(f"host {host!r} is not an IPv4 loopback address such as 127.0.0.1")


class RunningServer:
    """A double serving in this process's event loop."""

    def __init__(self, double: ModelServerDouble, runner: web.AppRunner, host: str, port: int) -> None:
        self.double = double
        self.host = host
        self.port = port
        self._runner = runner

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def behaviour(self) -> Behaviour:
        return self.double.behaviour

    @behaviour.setter
    def behaviour(self, behaviour: Behaviour) -> None:
        self.double.behaviour = behaviour

    async def close(self) -> None:
        await self._runner.cleanup()


async def start_model_server(
    behaviour: Behaviour | None = None,
    *,
    model_name: str = DEFAULT_MODEL_NAME,
    namespace: str = DEFAULT_NAMESPACE,
    host: str = "127.0.0.1",
    port: int = 0,
    allow_any_host: bool = False,
    refusal_counters: bool = True,
) -> RunningServer:
    """Starts a double; `port=0` picks a free port (see `.port`). Only loopback hosts, unless
    `allow_any_host` (in a Pod of the kind end-to-end run, where the kubelet must reach it)."""
    if not allow_any_host:
        require_loopback_host(host)
    double = ModelServerDouble(
        behaviour or Behaviour(), model_name, namespace, refusal_counters=refusal_counters
    )
    # Stopped, it gives open connections 1 s, not aiohttp's 60: a traffic driver's keep-alive
    # connections held each stop to the bed's 15 s SIGTERM deadline and a SIGKILL.
    runner = web.AppRunner(double.app(), access_log=None, shutdown_timeout=STOP_GRACE_SECONDS)
    await runner.setup()
    try:
        await web.TCPSite(runner, host, port).start()
    except OSError:
        await runner.cleanup()
        raise
    bound_port = runner.addresses[0][1]
    log.info("model server double listening", host=host, port=bound_port, model_name=model_name)
    return RunningServer(double, runner, host, bound_port)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m testbed.model_server_double", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--allow-any-host",
        action="store_true",
        help="allow a non-loopback --host; only for running as a Pod (the kind end-to-end run)",
    )
    parser.add_argument(
        "--port", type=int, default=8000, help="0 picks a free port; see the 'listening' line"
    )
    parser.add_argument("--model-name", default=DEFAULT_MODEL_NAME)
    parser.add_argument(
        "--namespace", default=DEFAULT_NAMESPACE, help="the namespace of the pods the double stands in for"
    )
    parser.add_argument(
        "--source", default="vllm", choices=sorted(EXPORTERS), help="whose metric names to export"
    )
    parser.add_argument("--error-rate", type=float, default=0.0)
    parser.add_argument("--abort-rate", type=float, default=0.0)
    parser.add_argument("--refusal-rate", type=float, default=0.0)
    parser.add_argument("--latency", type=float, default=0.2, help="median end-to-end latency in seconds")
    parser.add_argument("--tail-rate", type=float, default=0.0)
    parser.add_argument("--tail-latency", type=float, default=0.0)
    parser.add_argument("--ttft", type=float, default=None, help="time to first token in seconds")
    parser.add_argument(
        "--tpot",
        type=float,
        default=None,
        help="time per output token; then latency = ttft + (tokens - 1) x tpot",
    )
    parser.add_argument("--output-tokens", type=int, default=20, help="tokens of an answer")
    parser.add_argument("--requests-waiting", type=int, default=0)
    parser.add_argument("--refusal-style", choices=["text", "content_filter"], default="text")
    parser.add_argument("--sleep", action="store_true", help="really sleep the configured latency")
    parser.add_argument("--version", help="the model version answers are decided by (default: --model-name)")
    parser.add_argument("--test-set", help="a test set JSONL whose items the double answers (right or wrong)")
    parser.add_argument(
        "--correct",
        action="append",
        default=[],
        metavar="CAPABILITY=SHARE",
        type=_capability_share,
        help="share of a capability's items answered right (repeatable)",
    )
    parser.add_argument(
        "--default-correct", type=float, default=1.0, help="for capabilities not in --correct"
    )
    parser.add_argument("--judge-prefers", metavar="VERSION", help="be a pairwise judge preferring VERSION")
    parser.add_argument("--judge-preference", type=float, default=1.0, help="share of pairs where it does")
    parser.add_argument("--judge-position-bias", type=float, default=0.0, help="share of asks answered A")
    parser.add_argument(
        "--no-refusal-counters",
        action="store_true",
        help="leave llm_requests_total / llm_refusals_total to a real refusal proxy in front",
    )
    return parser


def _behaviour_from_args(args: argparse.Namespace) -> Behaviour:
    return Behaviour(
        source=args.source,
        error_rate=args.error_rate,
        abort_rate=args.abort_rate,
        refusal_rate=args.refusal_rate,
        refusal_style=args.refusal_style,
        latency=Latency(
            median=args.latency,
            tail_rate=args.tail_rate,
            tail_latency=args.tail_latency,
            ttft=args.ttft,
            tpot=args.tpot,
        ),
        output_tokens=args.output_tokens,
        requests_waiting=args.requests_waiting,
        simulate_latency_sleep=args.sleep,
        answers=Answers(
            version=args.version,
            test_set=args.test_set,
            correct=dict(args.correct),
            default_correct=args.default_correct,
        ),
        judge=Judging(
            prefers=args.judge_prefers,
            preference=args.judge_preference,
            position_bias=args.judge_position_bias,
        )
        if args.judge_prefers
        else None,
    )


def _capability_share(text: str) -> tuple[str, float]:
    capability, equals, share = text.partition("=")
    try:
        if equals and capability:
            return capability, float(share)
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"{text!r}: expected CAPABILITY=SHARE, such as math=0.9")


async def _serve(
    behaviour: Behaviour,
    identity: Identity,
    host: str,
    port: int,
    allow_any_host: bool,
    refusal_counters: bool,
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    server = await start_model_server(
        behaviour,
        model_name=identity.model_name,
        namespace=identity.namespace,
        host=host,
        port=port,
        allow_any_host=allow_any_host,
        refusal_counters=refusal_counters,
    )
    # The parent learns the port from this line (stdout carries nothing else; logs go to stderr).
    print(json.dumps({"listening": f"{server.host}:{server.port}"}), flush=True)
    await stop.wait()
    await server.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        behaviour = _behaviour_from_args(args)
        Answerer(behaviour.answers, args.model_name)  # a test set it cannot use is a usage error
        if not args.allow_any_host:
            require_loopback_host(args.host)
    except (OSError, ValueError) as error:  # pydantic's ValidationError included
        parser.error(str(error))
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    identity = Identity(args.model_name, args.namespace)
    asyncio.run(
        _serve(behaviour, identity, args.host, args.port, args.allow_any_host, not args.no_refusal_counters)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
