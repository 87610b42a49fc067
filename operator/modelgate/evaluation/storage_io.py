"""`modelgate eval`'s inputs read from, and full results written to, S3-compatible storage, with the
credentials of each option's variables (api/object_storage.py). Errors name the option and the key."""

from __future__ import annotations

import os
from collections.abc import Mapping

from modelgate.api.addresses import EgressPolicy
from modelgate.api.object_url import ObjectUrlError, parse_object_url, parse_prefix_url, results_url
from modelgate.evaluation.jsonl import InputError
from modelgate.storage import MissingCredentials, ObjectStore, StorageCredentials, StorageError

SCHEME = "s3://"


def is_stored(source: str) -> bool:
    return source.startswith(SCHEME)


async def read_stored(
    source: str, option: str, egress: EgressPolicy, environ: Mapping[str, str] = os.environ
) -> str:
    """The text of an s3:// object; InputError naming the option and the key otherwise."""
    try:
        url = parse_object_url(source)
        store = ObjectStore(StorageCredentials.for_option(option, environ), egress)
        data = (await store.read(url)).data
        return data.decode("utf-8")
    except (ObjectUrlError, MissingCredentials) as error:
        raise InputError(f"{option} {source}: {error}") from None
    except StorageError as error:  # its message names the key
        raise InputError(f"{option}: {error}") from None
    except UnicodeDecodeError:
        raise InputError(f"{option} {source}: not UTF-8 text") from None


class ResultsNotStored(RuntimeError):
    """The full results could not be written; names --results, the key and why."""


async def write_results(
    location: str, version: str, data: bytes, egress: EgressPolicy, environ: Mapping[str, str] = os.environ
) -> str:
    """Writes the results under `location` (`<location>/<version>/results.jsonl`); their URL."""
    option = "--results"
    try:
        url = results_url(parse_prefix_url(location), version)
        store = ObjectStore(StorageCredentials.for_option(option, environ), egress)
        await store.write(url, data)
    except (ObjectUrlError, MissingCredentials) as error:
        raise ResultsNotStored(f"{option} {location}: {error}") from None
    except StorageError as error:
        raise ResultsNotStored(f"{option}: {error}") from None
    return str(url)
