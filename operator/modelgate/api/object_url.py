"""`s3://bucket/key` addresses of objects in S3-compatible storage, checked as a tenant writes them,
and the layout of the keys modelgate writes (docs/object-storage.md). Pure.

A bucket follows S3's naming rules; a key is a path of non-empty segments of safe characters
(letters, digits and `-_.!*'()=+,:@`), none of them `..`: keys are joined into other keys and
printed, and a store or a file system that reads `..` or `//` would put them somewhere else.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator, Field, StringConstraints

from modelgate.api.markers import CelRule, cel_rules

SCHEME = "s3://"
BUCKET_PATTERN = r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]"
_SEGMENT = r"[A-Za-z0-9_.!*'()=+,:@-]+"
KEY_PATTERN = f"{_SEGMENT}(/{_SEGMENT})*"
OBJECT_URL_PATTERN = f"^s3://{BUCKET_PATTERN}/{KEY_PATTERN}$"
# A location under which keys are made: a bucket, or a bucket and a key prefix (a trailing / is
# dropped).
PREFIX_URL_PATTERN = f"^s3://{BUCKET_PATTERN}(/({KEY_PATTERN})?/?)?$"
MAX_KEY_BYTES = 1024
# s3:// + a 63-character bucket + / + a key; what modelgate appends to a prefix must fit too.
MAX_URL_LENGTH = 1093
MAX_PREFIX_LENGTH = 512

NOT_OBJECT_URL = (
    "must be s3://bucket/key: a bucket of 3 to 63 characters a-z, 0-9, '.' and '-' (starting and "
    "ending with a letter or digit), then a key of '/'-separated non-empty segments of letters, "
    "digits and -_.!*'()=+,:@"
)
NOT_PREFIX_URL = "must be s3://bucket or s3://bucket/prefix, the bucket and prefix as in s3://bucket/key"
PARENT_SEGMENT = "must not have a '..' segment"
BUCKET_DOTS = "the bucket must not have '..', '.-' or '-.', nor look like an IP address (1.2.3.4)"
_IP_LIKE = re.compile(r"^[0-9]+([.][0-9]+){3}$")
_BAD_DOTS = ("..", ".-", "-.")


class ObjectUrlError(ValueError):
    """A text that is not an s3:// address modelgate accepts; says what was expected."""


@dataclass(frozen=True)
class ObjectUrl:
    """One object (or, with an empty key, a bucket) in S3-compatible storage."""

    bucket: str
    key: str

    def __str__(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.key}" if self.key else f"{SCHEME}{self.bucket}"

    def child(self, *segments: str) -> ObjectUrl:
        """The object `segments` below this prefix; each segment is checked as a key's would be."""
        key = "/".join(filter(None, (self.key, *segments)))
        return parse_object_url(f"{SCHEME}{self.bucket}/{key}")


def parse_object_url(text: str) -> ObjectUrl:
    """An object's address, or ObjectUrlError saying what is wrong."""
    if len(text) > MAX_URL_LENGTH or not re.fullmatch(OBJECT_URL_PATTERN, text):
        raise ObjectUrlError(f"{NOT_OBJECT_URL}; at most {MAX_URL_LENGTH} characters")
    return _checked(text)


def parse_prefix_url(text: str) -> ObjectUrl:
    """A location keys are made under (its key may be empty), or ObjectUrlError."""
    if len(text) > MAX_PREFIX_LENGTH or not re.fullmatch(PREFIX_URL_PATTERN, text):
        raise ObjectUrlError(f"{NOT_PREFIX_URL}; at most {MAX_PREFIX_LENGTH} characters")
    return _checked(text.rstrip("/") if text.count("/") > 2 else text)


def _checked(text: str) -> ObjectUrl:
    bucket, _, key = text.removeprefix(SCHEME).partition("/")
    if _IP_LIKE.match(bucket) or any(bad in bucket for bad in _BAD_DOTS):
        raise ObjectUrlError(BUCKET_DOTS)
    if ".." in key.split("/"):
        raise ObjectUrlError(PARENT_SEGMENT)
    if len(key.encode()) > MAX_KEY_BYTES:
        raise ObjectUrlError(f"the key must be at most {MAX_KEY_BYTES} bytes")
    return ObjectUrl(bucket, key)


def _valid_object_url(text: str) -> str:
    parse_object_url(text)
    return text


def _valid_prefix_url(text: str) -> str:
    parse_prefix_url(text)
    return text


# The same checks at admission: the pattern, then CEL for what a pattern cannot say in RE2.
_URL_RULES = (
    CelRule("!self.matches('/[.][.](/|$)')", message=PARENT_SEGMENT),
    # The bad pairs anywhere in the bucket (up to the first '/'), an IP address as the whole bucket.
    CelRule(
        "!self.matches('^s3://([0-9]+([.][0-9]+){3}(/|$)|[^/]*([.][.]|[.]-|-[.]))')", message=BUCKET_DOTS
    ),
)
S3ObjectUrl = Annotated[
    str,
    StringConstraints(max_length=MAX_URL_LENGTH, pattern=OBJECT_URL_PATTERN),
    AfterValidator(_valid_object_url),
    Field(json_schema_extra=cel_rules(*_URL_RULES)),
]
S3PrefixUrl = Annotated[
    str,
    StringConstraints(max_length=MAX_PREFIX_LENGTH, pattern=PREFIX_URL_PATTERN),
    AfterValidator(_valid_prefix_url),
    Field(json_schema_extra=cel_rules(*_URL_RULES)),
]


RESULTS_FILE = "results.jsonl"
_VERSION_CHARACTERS = re.compile(r"[^A-Za-z0-9_.=+-]")


def results_location(prefix: ObjectUrl, namespace: str, rollout: str, attempt: str, check: str) -> ObjectUrl:
    """Where one check of one attempt of a rollout's gate writes its full results:
    `<prefix>/<namespace>/<rollout>/<attempt>/<check>`; the evaluator adds the test set's version
    and the file (`results_url`). The names are Kubernetes names and the gate's run id, all safe."""
    return prefix.child(namespace, rollout, attempt, check)


def shard_results_file(index: int, count: int) -> str:
    """The file of one shard of a parallel check (`count` Pods): each writes its own items."""
    return f"results-{index}-of-{count}.jsonl"


def results_url(location: ObjectUrl, test_set_version: str, file: str = RESULTS_FILE) -> ObjectUrl:
    """`<location>/<test-set-version>/<file>` (`results.jsonl`, or a shard's `shard_results_file`):
    the version as a key segment (characters a key segment may not hold become '_', and a version of
    dots only is prefixed)."""
    segment = _VERSION_CHARACTERS.sub("_", test_set_version)[:128] or "_"
    if set(segment) == {"."}:
        segment = f"v{segment}"
    return location.child(segment, file)
