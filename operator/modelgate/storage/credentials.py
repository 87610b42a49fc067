"""How to reach an S3-compatible store: endpoint, region and credentials, from the environment.

How to reach an S3-compatible store: endpoint, region and credentials, from the environment (an
evaluator Job gets them from a Secret through `secretKeyRef`; the operator never reads them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from modelgate.api.object_storage import AWS_PREFIX, ROLE_PREFIXES, SECRET_KEYS

DEFAULT_REGION = "us-east-1"
ENDPOINT, REGION, ACCESS_KEY_ID, SECRET_ACCESS_KEY, SESSION_TOKEN = SECRET_KEYS.values()


class MissingCredentials(ValueError):
    """The environment lacks a value the store needs; names the variable."""


@dataclass(frozen=True)
class StorageCredentials:
    """`endpoint`: an http(s) origin, or None for AWS S3 in `region`. The secrets are left out of
    repr() and so out of every log line and traceback that prints this object."""

    endpoint: str | None
    region: str
    access_key_id: str
    secret_access_key: str = field(repr=False)
    session_token: str | None = field(default=None, repr=False)

    @property
    def endpoint_url(self) -> str:
        return self.endpoint or f"https://s3.{self.region}.amazonaws.com"

    @classmethod
    def from_environment(cls, environ: Mapping[str, str], prefix: str = AWS_PREFIX) -> StorageCredentials:
        """From `<prefix>ENDPOINT_URL`, `<prefix>REGION`, `<prefix>ACCESS_KEY_ID`,
        `<prefix>SECRET_ACCESS_KEY` and `<prefix>SESSION_TOKEN`; the access key and secret are
        required (without them a client would ask the cloud's metadata service)."""

        def value(name: str) -> str | None:
            return (environ.get(prefix + name) or "").strip() or None

        access_key_id, secret = value(ACCESS_KEY_ID), value(SECRET_ACCESS_KEY)
        for name, given in ((ACCESS_KEY_ID, access_key_id), (SECRET_ACCESS_KEY, secret)):
            if given is None:
                raise MissingCredentials(f"${prefix}{name} is not set: object storage needs it")
        assert access_key_id is not None and secret is not None
        return cls(
            endpoint=value(ENDPOINT),
            region=value(REGION) or DEFAULT_REGION,
            access_key_id=access_key_id,
            secret_access_key=secret,
            session_token=value(SESSION_TOKEN),
        )

    @classmethod
    def for_option(cls, option: str, environ: Mapping[str, str]) -> StorageCredentials:
        """For one of `modelgate eval`'s options (--test-set, ...): its own variables
        (MODELGATE_TEST_SET_S3_*, ...) when its access key is set, else the AWS_* ones."""
        prefix = ROLE_PREFIXES[option]
        own = bool((environ.get(prefix + ACCESS_KEY_ID) or "").strip())
        return cls.from_environment(environ, prefix if own else AWS_PREFIX)
