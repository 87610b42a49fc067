"""The refusal proxy's recording options (`--record` and the rest; docs/refusal-sidecar.md,
"Recording requests"): off unless `--record` is given."""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable
from pathlib import Path

from modelgate.egress import policy_from_environment
from modelgate.sidecar.recording import DirectorySink, ObjectStoreSink, RecordingSettings, RecordSink
from modelgate.sidecar.redaction import RedactionPatternError, Redactor
from modelgate.storage import (
    MissingCredentials,
    ObjectStore,
    ObjectUrlError,
    StorageCredentials,
    parse_prefix_url,
)

FILE_SCHEME = "file://"
# The Pod's name (the downward API, or the hostname a Pod gets), in the names of the objects written.
SOURCE_ENV = ("POD_NAME", "HOSTNAME")


def add_recording_options(proxy: argparse.ArgumentParser) -> None:
    group = proxy.add_argument_group("recording (off by default; the records are personal data)")
    group.add_argument(
        "--record",
        metavar="URL",
        help="record a sample of completion requests and their answers, redacted, as JSONL objects "
        "under s3://bucket/prefix (endpoint and credentials from $AWS_ENDPOINT_URL, $AWS_REGION, "
        "$AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY) or file:///directory",
    )
    group.add_argument(
        "--record-rate",
        type=_rate,
        default=0.01,
        help="the share of completion requests recorded, 0 < rate <= 1 (default: %(default)s)",
    )
    group.add_argument(
        "--record-max-bytes",
        type=positive(int),
        default=100 * 1024 * 1024,
        help="bytes recorded in all, over the process's life; then recording stops and "
        "llm_recording_stopped is 1 (default: %(default)s)",
    )
    group.add_argument(
        "--record-object-bytes",
        type=positive(int),
        default=RecordingSettings.object_bytes,
        help="bytes of one object at most (a record larger than this is not recorded) (default: %(default)s)",
    )
    group.add_argument(
        "--record-batch-requests",
        type=positive(int),
        default=RecordingSettings.batch_requests,
        help="an object is written after this many records (default: %(default)s)",
    )
    group.add_argument(
        "--record-batch-seconds",
        type=positive(float),
        default=RecordingSettings.batch_seconds,
        help="or after this many seconds (default: %(default)s)",
    )
    group.add_argument(
        "--redact-pattern",
        action="append",
        default=[],
        metavar="REGEX",
        help="a regular expression whose matches are redacted too, besides the built-in ones for emails, "
        "long numbers (cards, phones), API keys and bearer tokens (repeatable)",
    )
    group.add_argument("--record-seed", type=int, help=argparse.SUPPRESS)  # tests: the same draw every run


def recording_settings(args: argparse.Namespace) -> RecordingSettings | None:
    if args.record is None:
        return None
    try:
        redactor = Redactor.with_built_ins(args.redact_pattern)
    except RedactionPatternError as error:
        raise SystemExit(f"modelgate refusal-proxy: --redact-pattern: {error}") from None
    return RecordingSettings(
        sink=_sink(args.record),
        sink_name=args.record,
        rate=args.record_rate,
        max_bytes=args.record_max_bytes,
        object_bytes=min(args.record_object_bytes, args.record_max_bytes),
        batch_requests=args.record_batch_requests,
        batch_seconds=args.record_batch_seconds,
        redactor=redactor,
        source=next((os.environ[name] for name in SOURCE_ENV if os.environ.get(name)), "proxy"),
        seed=args.record_seed,
    )


def _sink(url: str) -> RecordSink:
    if url.startswith(FILE_SCHEME):
        path = Path(url.removeprefix(FILE_SCHEME))
        if not path.is_absolute():
            raise SystemExit(
                f"modelgate refusal-proxy: --record {url!r}: expected file:///absolute/directory"
            )
        return DirectorySink(path)
    try:
        prefix = parse_prefix_url(url)
        credentials = StorageCredentials.from_environment(os.environ)
    except (ObjectUrlError, MissingCredentials) as error:
        raise SystemExit(f"modelgate refusal-proxy: --record {url!r}: {error}") from None
    return ObjectStoreSink(ObjectStore(credentials, policy_from_environment([], os.environ)), prefix)


def _rate(text: str) -> float:
    try:
        rate = float(text)
    except ValueError:
        rate = 0.0
    if not 0 < rate <= 1:  # NaN included
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number greater than 0 and at most 1")
    return rate


def positive(kind: type[int] | type[float]) -> Callable[[str], float]:
    """An argparse type: a finite number above 0 of `kind`."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            value = 0
        if not (value > 0 and math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"{text!r}: expected a positive {kind.__name__}")
        return value

    return parse
