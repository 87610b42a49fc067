"""`modelgate eval --replay-recorded`: replay the newest requests a refusal proxy recorded.

`modelgate eval --replay-recorded s3://bucket/prefix --replay-last N`: replay the newest N
requests a refusal proxy recorded there (docs/gate-eval.md, "Replaying recorded requests")."""

from __future__ import annotations

import argparse

from modelgate.api.object_storage import ROLE_PREFIXES
from modelgate.api.object_url import ObjectUrlError, parse_prefix_url
from modelgate.evaluator.recorded_replay import CREDENTIALS_OPTION, RecordedSource

DEFAULT_LAST = 1000
MAX_LAST = 100_000


def add_recorded_replay_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--replay-recorded",
        metavar="S3_PREFIX",
        help="replay the newest --replay-last requests that refusal-proxy --record wrote under this "
        f"s3://bucket/prefix (the store from ${ROLE_PREFIXES[CREDENTIALS_OPTION]}ENDPOINT_URL, "
        "...ACCESS_KEY_ID, ...SECRET_ACCESS_KEY, else $AWS_*); instead of --replay",
    )
    parser.add_argument(
        "--replay-last",
        type=_last,
        default=DEFAULT_LAST,
        metavar="N",
        help=f"how many recorded requests, the newest (default: %(default)s, at most {MAX_LAST})",
    )


def recorded_source(args: argparse.Namespace) -> RecordedSource | None:
    if args.replay_recorded is None:
        return None
    try:
        prefix = parse_prefix_url(args.replay_recorded)
    except ObjectUrlError as error:
        raise SystemExit(f"modelgate eval: --replay-recorded {args.replay_recorded!r}: {error}") from None
    return RecordedSource(prefix, args.replay_last)


def _last(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) <= MAX_LAST:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a whole number from 1 to {MAX_LAST}")
    return int(text)
