"""`modelgate eval`'s inputs read from, and full results written to, S3-compatible storage.

`modelgate eval`'s inputs read from, and full results written to, S3-compatible storage, with the
credentials of each option's variables (api/object_storage.py). Errors name the option and the key."""

from __future__ import annotations

from collections.abc import Mapping

from modelgate.api.addresses import EgressPolicy
from modelgate.api.gate_result import GateResult, StoredData
from modelgate.api.gate_shard import ShardResult
from modelgate.api.object_url import (
    RESULTS_FILE,
    ObjectUrlError,
    parse_object_url,
    parse_prefix_url,
    results_url,
)
from modelgate.evaluator.item_results import ItemResults
from modelgate.evaluator.jsonl import InputError
from modelgate.evaluator.storage_failure import ResultsNotStored, StoredInputError
from modelgate.storage import MissingCredentials, ObjectStore, StorageCredentials, StorageError

SCHEME = "s3://"
READ_BY_OPTION = {"--test-set": StoredData.TEST_SET, "--replay": StoredData.REPLAY}


def is_stored(source: str) -> bool:
    return source.startswith(SCHEME)


async def read_stored(source: str, option: str, egress: EgressPolicy, environ: Mapping[str, str]) -> str:
    """The text of an s3:// object; StoredInputError naming the option and the key otherwise."""
    read = READ_BY_OPTION[option]
    try:
        url = parse_object_url(source)
        store = ObjectStore(StorageCredentials.for_option(option, environ), egress)
        data = (await store.read(url)).data
        return data.decode("utf-8")
    except (ObjectUrlError, MissingCredentials) as error:
        raise StoredInputError(f"{option} {source}: {error}", read) from None
    except StorageError as error:  # its message names the key
        raise StoredInputError(f"{option}: {error}", read) from None
    except UnicodeDecodeError:
        raise InputError(f"{option} {source}: not UTF-8 text") from None


async def write_results(
    location: str,
    items: ItemResults,
    result: GateResult | ShardResult,
    egress: EgressPolicy,
    file: str = RESULTS_FILE,
    *,
    environ: Mapping[str, str],
) -> str:
    """Writes the full results (a shard's: its counts and its own items) under `location`, as
    `<location>/<version>/<file>`; their URL."""
    option = "--results"
    try:
        url = results_url(parse_prefix_url(location), items.version, file)
        store = ObjectStore(StorageCredentials.for_option(option, environ), egress)
        await store.write(url, items.jsonl(result))
    except (ObjectUrlError, MissingCredentials) as error:
        raise ResultsNotStored(f"{option} {location}: {error}", StoredData.RESULTS) from None
    except StorageError as error:
        raise ResultsNotStored(f"{option}: {error}", StoredData.RESULTS) from None
    return str(url)
