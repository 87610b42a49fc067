"""Object storage in the spec, and the contract of a storage Secret with the evaluator.

Object storage in the spec (docs/object-storage.md): an object to read and a location to write
under, each with the Secret that reaches it; and the contract between such a Secret, the evaluator
Job's environment and the evaluator: which keys the Secret holds, and the variable each becomes. The
operator passes the values by `secretKeyRef` and never reads them."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field

from modelgate.api.fields import ObjectName
from modelgate.api.object_url import S3ObjectUrl, S3PrefixUrl
from modelgate.api.specmodel import SpecModel

# The Secret's keys, and the variable (after a prefix) each becomes.
SECRET_KEYS: Mapping[str, str] = {
    "endpoint": "ENDPOINT_URL",
    "region": "REGION",
    "accessKeyId": "ACCESS_KEY_ID",
    "secretAccessKey": "SECRET_ACCESS_KEY",
    "sessionToken": "SESSION_TOKEN",
}
REQUIRED_SECRET_KEYS = frozenset({"accessKeyId", "secretAccessKey"})
# The variables the AWS tools read (AWS_ENDPOINT_URL, ...): a person's shell, and the fallback.
AWS_PREFIX = "AWS_"
# One prefix per input or output of `modelgate eval`, by its option: each may use its own Secret.
ROLE_PREFIXES: Mapping[str, str] = {
    "--test-set": "MODELGATE_TEST_SET_S3_",
    "--replay": "MODELGATE_REPLAY_S3_",
    "--results": "MODELGATE_RESULTS_S3_",
}


def secret_environment(prefix: str, secret: str) -> list[dict[str, object]]:
    """A container's `env` entries that take a storage Secret's values (optional keys optional)."""
    return [
        {
            "name": prefix + variable,
            "valueFrom": {
                "secretKeyRef": {"name": secret, "key": key, "optional": key not in REQUIRED_SECRET_KEYS}
            },
        }
        for key, variable in SECRET_KEYS.items()
    ]


STORAGE_SECRET = (
    "Name of a Secret in the resource's namespace holding the store's endpoint, region, "
    "accessKeyId, secretAccessKey and optional sessionToken (docs/object-storage.md); the evaluator's "
    "Pod gets them as environment variables, the operator never reads them."
)


class S3Object(SpecModel):
    """An object in S3-compatible storage and the Secret that reaches it."""

    url: S3ObjectUrl = Field(description="s3://bucket/key of the object.")
    secret: ObjectName = Field(description=STORAGE_SECRET)


class S3Location(SpecModel):
    """A location in S3-compatible storage, under which modelgate writes objects, and the Secret that
    reaches it."""

    url: S3PrefixUrl = Field(description="s3://bucket or s3://bucket/prefix.")
    secret: ObjectName = Field(description=STORAGE_SECRET)


class GateResults(SpecModel):
    """Where the built-in evaluator keeps every check's full per-item results."""

    s3: S3Location = Field(
        description="A location in S3-compatible storage: each check's results go to "
        "<url>/<namespace>/<rollout>/<gate run>/<check>/<test-set version>/results.jsonl (a "
        "ModelEvaluation's: <url>/<namespace>/<evaluation>/<run id>/<check>/...; "
        "docs/object-storage.md), and the status points at them.",
    )
