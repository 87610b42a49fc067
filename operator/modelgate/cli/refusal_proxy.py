"""`modelgate refusal-proxy`: the sidecar that counts refused answers (docs/refusal-sidecar.md)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
from pathlib import Path

from yarl import URL

from modelgate.chat_answers import TextLimits
from modelgate.cli.cluster_errors import file_problem
from modelgate.cli.refusal_proxy_recording import add_recording_options, positive, recording_settings
from modelgate.cli.target import LOG_FORMAT_HELP
from modelgate.observability import configure_logging
from modelgate.refusal_classifier import DEFAULT_PATTERNS, PatternError, RefusalPatterns, parse_patterns
from modelgate.sidecar.connections import ConnectionLimits
from modelgate.sidecar.proxy import ProxySettings, start_refusal_proxy


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    proxy = commands.add_parser(
        "refusal-proxy",
        help="serve in front of an OpenAI-compatible server and count refused answers",
        description="Forwards every request to --upstream unchanged (streamed answers included) and "
        "counts the answers of /v1/chat/completions and /v1/completions in llm_requests_total and "
        "llm_refusals_total, served at /metrics on --metrics-port.",
    )
    proxy.add_argument(
        "--upstream", default="http://127.0.0.1:8000", help="the model server's URL (default: %(default)s)"
    )
    proxy.add_argument(
        "--host",
        default="127.0.0.1",
        help="address both ports bind (default: %(default)s); in a Pod, 0.0.0.0 so that the Service "
        "and Prometheus reach them",
    )
    proxy.add_argument("--port", type=int, default=8080, help="the proxied API (default: %(default)s)")
    proxy.add_argument(
        "--metrics-port", type=int, default=9180, help="/metrics and /healthz (default: %(default)s)"
    )
    proxy.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="NAME",
        help="a served model name whose counters are exported at 0 from the start (repeatable; also "
        "the model label of answers that name none, such as errors); when given, answers naming "
        'any other model are counted under model="other"',
    )
    proxy.add_argument(
        "--max-model-labels",
        type=positive(int),
        default=ProxySettings.max_model_labels,
        help="without --model: how many model names answered become labels; later names are counted "
        'under model="other" (default: %(default)s)',
    )
    proxy.add_argument(
        "--patterns-file",
        type=Path,
        help="refusal patterns, one case-insensitive regular expression per line ('#' comments); "
        "replaces the defaults",
    )
    _add_size_limits(proxy)
    _add_connection_limits(proxy)
    add_recording_options(proxy)
    proxy.add_argument("--log-format", choices=["json", "console"], default="json", help=LOG_FORMAT_HELP)
    proxy.add_argument("--verbose", action="store_true", help="debug logs (one line per answer)")
    proxy.set_defaults(handler=run_refusal_proxy)


def _add_size_limits(proxy: argparse.ArgumentParser) -> None:
    proxy.add_argument(
        "--max-classified-bytes",
        type=positive(int),
        default=ProxySettings.max_classified_bytes,
        help="JSON answers larger than this are passed on but not classified (default: %(default)s)",
    )
    proxy.add_argument(
        "--max-buffered-bytes",
        type=positive(int),
        default=ProxySettings.max_buffered_bytes,
        help="the JSON answers being read hold at most this many bytes at once, across connections; "
        "an answer that does not fit is passed on unclassified (default: %(default)s)",
    )
    proxy.add_argument(
        "--classified-head-chars",
        type=positive(int),
        default=TextLimits.head,
        help="the first characters of each choice's text that are classified (default: %(default)s)",
    )
    proxy.add_argument(
        "--classified-tail-chars",
        type=positive(int),
        default=TextLimits.tail,
        help="and the last ones; the text between is passed on unread (default: %(default)s)",
    )


def _add_connection_limits(proxy: argparse.ArgumentParser) -> None:
    proxy.add_argument(
        "--max-connections",
        type=positive(int),
        default=ConnectionLimits.max_connections,
        help="open client connections at most; more are answered 503 and closed (default: %(default)s)",
    )
    proxy.add_argument(
        "--header-timeout",
        type=positive(float),
        default=ConnectionLimits.header_timeout,
        metavar="SECONDS",
        help="a request's headers must arrive within this time of its first byte, or of connecting; "
        "the client is answered 408 and closed otherwise (default: %(default)s)",
    )
    proxy.add_argument(
        "--idle-timeout",
        type=positive(float),
        default=ConnectionLimits.idle_timeout,
        metavar="SECONDS",
        help="an idle keep-alive connection is closed after this time; keep it above the gateway's "
        "idle timeout for its backends (default: %(default)s)",
    )
    proxy.add_argument(
        "--upstream-read-timeout",
        type=positive(float),
        default=ProxySettings.upstream_read_timeout,
        metavar="SECONDS",
        help="the model server may stay silent this long, before its answer begins and between two "
        "chunks; then the client gets 504 (or its stream is broken off) (default: %(default)s)",
    )


def _patterns(path: Path | None) -> RefusalPatterns:
    if path is None:
        return RefusalPatterns.of(DEFAULT_PATTERNS)
    try:
        return parse_patterns(path.read_text(encoding="utf-8"), str(path))
    except OSError as error:
        raise SystemExit(f"modelgate refusal-proxy: --patterns-file: {file_problem(error)}") from None
    except PatternError as error:
        raise SystemExit(f"modelgate refusal-proxy: --patterns-file: {error}") from None


def _upstream(url: str) -> URL:
    parsed = URL(url)
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise SystemExit(f"modelgate refusal-proxy: --upstream {url!r}: expected http://HOST:PORT")
    return parsed


def run_refusal_proxy(args: argparse.Namespace) -> int:
    configure_logging(args.log_format, logging.DEBUG if args.verbose else logging.INFO)
    settings = ProxySettings(
        upstream=_upstream(args.upstream),
        patterns=_patterns(args.patterns_file),
        models=tuple(args.model),
        max_model_labels=args.max_model_labels,
        max_classified_bytes=args.max_classified_bytes,
        max_buffered_bytes=args.max_buffered_bytes,
        text_limits=TextLimits(args.classified_head_chars, args.classified_tail_chars),
        connections=ConnectionLimits(args.max_connections, args.header_timeout, args.idle_timeout),
        upstream_read_timeout=args.upstream_read_timeout,
        recording=recording_settings(args),
    )
    asyncio.run(_serve(settings, args.host, args.port, args.metrics_port))
    return 0


async def _serve(settings: ProxySettings, host: str, port: int, metrics_port: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    running = await start_refusal_proxy(settings, host, port, metrics_port)
    await stop.wait()
    await running.close()
