"""S3-compatible object storage for the evaluator, the refusal proxy and the CLI (never the operator:
it does not read credentials). docs/object-storage.md.

    store = ObjectStore(StorageCredentials.from_environment(environ), egress)
    stored = await store.read(parse_object_url("s3://bucket/sets/qa.jsonl"))
    again = await store.read(url, version=stored.version)   # StorageError CHANGED if it changed
    version = await store.write(url, b"...")

Every failure is a StorageError: `.url`, `.problem` (a StorageProblem) and a message naming both.
"""

from modelgate.api.object_url import ObjectUrl, ObjectUrlError, parse_object_url, parse_prefix_url
from modelgate.storage.credentials import MissingCredentials, StorageCredentials
from modelgate.storage.storage_error import StorageError, StorageProblem
from modelgate.storage.store import ObjectStore, StoredObject

__all__ = [
    "MissingCredentials",
    "ObjectStore",
    "ObjectUrl",
    "ObjectUrlError",
    "StorageCredentials",
    "StorageError",
    "StorageProblem",
    "StoredObject",
    "parse_object_url",
    "parse_prefix_url",
]
