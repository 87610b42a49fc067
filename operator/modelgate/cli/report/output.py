"""Where `modelgate report` writes its page: a file, or an object in S3-compatible storage.

Where `modelgate report` writes its page (and `modelgate evaluations -o` a history): a file, or
an object in S3-compatible storage (`--output s3://bucket/key`, credentials from $AWS_ENDPOINT_URL,
$AWS_REGION, $AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY and $AWS_SESSION_TOKEN;
docs/object-storage.md)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from modelgate.egress import policy_from_environment
from modelgate.storage import (
    MissingCredentials,
    ObjectStore,
    ObjectUrlError,
    StorageCredentials,
    StorageError,
    parse_object_url,
)

SCHEME = "s3://"


class OutputFailed(RuntimeError):
    """The page could not be written; says where and why (never a secret)."""


def write_output(output: str, page: str) -> str:
    """Writes the page to `output` (a path or s3://bucket/key); what was written, for people."""
    if not output.startswith(SCHEME):
        Path(output).write_text(page, encoding="utf-8")
        return output
    try:
        url = parse_object_url(output)
        store = ObjectStore(
            StorageCredentials.from_environment(os.environ), policy_from_environment([], os.environ)
        )
        version = asyncio.run(store.write(url, page.encode()))
    except (ObjectUrlError, MissingCredentials) as error:
        raise OutputFailed(f"--output {output}: {error}") from None
    except StorageError as error:  # names the key
        raise OutputFailed(f"--output: {error}") from None
    return f"{url} (version {version})"
