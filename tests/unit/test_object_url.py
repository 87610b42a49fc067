"""s3:// addresses a tenant writes: what is refused (hostile bucket names and keys), the same at
admission (the CRD's pattern and CEL) as in the model; and the layout of the keys modelgate writes."""

from __future__ import annotations

import re

import pytest
from pydantic import BaseModel, ValidationError

from modelgate.api.object_url import (
    MAX_KEY_BYTES,
    ObjectUrl,
    ObjectUrlError,
    S3ObjectUrl,
    S3PrefixUrl,
    parse_object_url,
    parse_prefix_url,
    results_location,
    results_url,
)


class _Holder(BaseModel):
    url: S3ObjectUrl


class _PrefixHolder(BaseModel):
    prefix: S3PrefixUrl


@pytest.mark.parametrize(
    "url",
    [
        "s3://sets/qa.jsonl",
        "s3://my-bucket.example/sets/2026-12-01/qa.jsonl",
        "s3://b12/a/b/c/d=1/x+y,z:@!*'().jsonl",
    ],
)
def test_good_object_urls_parse_to_bucket_and_key(url: str) -> None:
    parsed = parse_object_url(url)
    assert str(parsed) == url
    assert _Holder(url=url).url == url


@pytest.mark.parametrize(
    "url",
    [
        "s3://sets",  # no key
        "s3://sets/",  # empty key
        "s3://sets/../other/secret",  # parent segment
        "s3://sets/a/../../b",
        "s3://sets/a/..",
        "s3://sets//a",  # empty segment
        "s3://sets/a/",  # trailing slash: a prefix, not an object
        "s3://sets/ a",  # space
        "s3://sets/a?versionId=1",  # query
        "s3://sets/a#b",  # fragment
        "s3://sets/a%2F..%2Fb",  # encoded
        "s3://sets/a\\..\\b",  # backslash
        "s3://sets/a\nb",  # newline
        "s3://Sets/a",  # upper case bucket
        "s3://ab/a",  # bucket too short
        "s3://" + "b" * 64 + "/a",  # bucket too long
        "s3://-bucket/a",
        "s3://bucket-/a",
        "s3://buc..ket/a",  # adjacent dots
        "s3://buc.-ket/a",
        "s3://ml.-evals/a",  # a bad pair inside the bucket, not only at its end
        "s3://ml-.evals/a/b",
        "s3://192.168.1.1/a",  # an IP address
        "s3://user:pass@bucket/a",  # credentials
        "https://bucket.s3.amazonaws.com/a",  # not s3://
        "S3://bucket/a",
        "s3://bucket/" + "k" * (MAX_KEY_BYTES + 1),  # too long
    ],
)
def test_hostile_object_urls_are_refused_saying_what_was_expected(url: str) -> None:
    with pytest.raises(ObjectUrlError):
        parse_object_url(url)
    with pytest.raises(ValidationError) as refused:
        _Holder(url=url)
    assert refused.value.errors()[0]["loc"] == ("url",)


def admission_refuses(url: str, model: type[BaseModel], field: str) -> bool:
    """Whether the CRD's CEL rules on `field` refuse `url`: each rule is `!self.matches('<RE2>')`,
    and CEL's matches() finds the expression anywhere in the text, as re.search does."""
    rules = model.model_json_schema()["properties"][field]["x-kubernetes-validations"]
    expressions = [re.fullmatch(r"!self\.matches\('(.*)'\)", rule["rule"]) for rule in rules]
    assert all(expressions), rules
    return any(re.search(expression[1], url) for expression in expressions if expression)


@pytest.mark.parametrize(
    "url",
    [
        "s3://ml.-evals/a",
        "s3://ml-.evals/a",
        "s3://ml..evals/a",
        "s3://evals-./a",
        "s3://192.168.1.1/a",
        "s3://sets/a/../b",
    ],
)
def test_admission_refuses_the_buckets_and_keys_the_model_refuses(url: str) -> None:
    with pytest.raises(ObjectUrlError):
        parse_object_url(url)
    assert admission_refuses(url, _Holder, "url")
    assert admission_refuses(url.rsplit("/", 1)[0], _PrefixHolder, "prefix")


@pytest.mark.parametrize("url", ["s3://my-bucket.example/a.b-c/d", "s3://1.2.3.4.5/a", "s3://b-1.x/-./a"])
def test_admission_lets_good_buckets_through(url: str) -> None:
    parse_object_url(url)
    assert not admission_refuses(url, _Holder, "url")


@pytest.mark.parametrize(
    ("url", "bucket", "key"),
    [
        ("s3://results", "results", ""),
        ("s3://results/", "results", ""),
        ("s3://results/gate", "results", "gate"),
        ("s3://results/gate/runs/", "results", "gate/runs"),
    ],
)
def test_prefix_urls_may_name_a_bucket_alone(url: str, bucket: str, key: str) -> None:
    assert parse_prefix_url(url) == ObjectUrl(bucket, key)
    _PrefixHolder(prefix=url)


@pytest.mark.parametrize(
    "url", ["s3://results/../x", "s3://results//x", "s3://results/a/../", "s3://1.2.3.4", "s3://res ults"]
)
def test_hostile_prefix_urls_are_refused(url: str) -> None:
    with pytest.raises(ObjectUrlError):
        parse_prefix_url(url)
    with pytest.raises(ValidationError):
        _PrefixHolder(prefix=url)


def test_results_key_carries_namespace_rollout_attempt_check_and_test_set_version() -> None:
    location = results_location(
        parse_prefix_url("s3://results/gate"), "team-a", "chat", "3-20261205T0530", "qa"
    )
    url = results_url(location, "5d41402abc4b2a76b9719d911017c592")
    assert url == ObjectUrl(
        "results", "gate/team-a/chat/3-20261205T0530/qa/5d41402abc4b2a76b9719d911017c592/results.jsonl"
    )
    at_root = results_location(parse_prefix_url("s3://results"), "ns", "r", "1-x", "c")
    assert at_root.key == "ns/r/1-x/c"


@pytest.mark.parametrize("version", ['"abc-2"', "../..", "a/b", "..", "", "v 1?#"])
def test_a_hostile_test_set_version_stays_one_key_segment(version: str) -> None:
    location = ObjectUrl("results", "ns/r/1-x/c")
    url = results_url(location, version)
    segments = url.key.split("/")
    assert segments[:4] == ["ns", "r", "1-x", "c"]
    assert len(segments) == 6 and segments[-1] == "results.jsonl"
    assert segments[4] not in ("", ".", "..")
