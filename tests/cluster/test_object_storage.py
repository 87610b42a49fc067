"""modelgate.storage against the bed's S3-compatible server (moto, checking credentials): objects
written and read back with their versions, a read pinned to a version, and each failure a clear
error naming the key: a missing bucket, a missing key, wrong credentials, an object that changed
between two reads."""

from __future__ import annotations

import pytest

from modelgate.api.object_url import ObjectUrl
from modelgate.storage import StorageError, StorageProblem
from testbed.s3_server import S3Server
from tests.support.storage import bed_store, fresh_url, run


def failure(coroutine: object) -> StorageError:
    with pytest.raises(StorageError) as raised:
        run(coroutine)  # type: ignore[arg-type]
    return raised.value


def test_written_objects_read_back_with_their_version(s3_server: S3Server) -> None:
    store, url = bed_store(s3_server), fresh_url(s3_server, "qa.jsonl")
    version = run(store.write(url, b'{"testSet": {}}\n'))
    read = run(store.read(url))
    assert (read.data, read.version) == (b'{"testSet": {}}\n', version)
    assert run(store.read(url, version=version)).data == read.data
    assert run(store.version(url)) == version


def test_a_rewritten_object_has_a_new_version(s3_server: S3Server) -> None:
    store, url = bed_store(s3_server), fresh_url(s3_server, "qa.jsonl")
    first = run(store.write(url, b"one"))
    second = run(store.write(url, b"two"))
    assert first != second
    assert run(store.read(url)).version == second


def test_an_object_changed_between_two_reads_is_an_error_naming_the_key_and_both_versions(
    s3_server: S3Server,
) -> None:
    store, url = bed_store(s3_server), fresh_url(s3_server, "qa.jsonl")
    run(store.write(url, b"one"))
    seen = run(store.read(url)).version
    now = run(store.write(url, b"two"))
    error = failure(store.read(url, version=seen))
    assert error.problem is StorageProblem.CHANGED
    assert str(url) in str(error) and seen in str(error) and now in str(error)


def test_a_missing_bucket_is_an_error_naming_the_key(s3_server: S3Server) -> None:
    url = ObjectUrl("no-such-bucket", "sets/qa.jsonl")
    error = failure(bed_store(s3_server).read(url))
    assert error.problem is StorageProblem.NO_BUCKET
    assert str(url) in str(error)


def test_a_missing_key_is_an_error_naming_it(s3_server: S3Server) -> None:
    url = fresh_url(s3_server, "absent.jsonl")
    error = failure(bed_store(s3_server).read(url))
    assert error.problem is StorageProblem.NO_KEY
    assert str(url) in str(error)


def test_wrong_credentials_are_refused_naming_the_key_and_never_the_secret(s3_server: S3Server) -> None:
    url = fresh_url(s3_server, "qa.jsonl")
    run(bed_store(s3_server).write(url, b"one"))
    wrong = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYWRONGKEY"
    for operation in (bed_store(s3_server, secret_access_key=wrong).read(url),
                      bed_store(s3_server, secret_access_key=wrong).write(url, b"two")):  # fmt: skip
        error = failure(operation)
        assert error.problem is StorageProblem.CREDENTIALS
        assert str(url) in str(error)
        assert wrong not in str(error) and s3_server.secret_access_key not in str(error)
    assert run(bed_store(s3_server).read(url)).data == b"one"  # the refused write changed nothing
