"""Storage's errors name the object, what went wrong and the HTTP status, and never a secret, the
endpoint or what the store's answer said: not in the message, the credentials' repr, the gate
check's summary or the evaluator's output."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from modelgate.api.addresses import EgressPolicy
from modelgate.api.gate_result import GateResult
from modelgate.cli import gate_eval
from modelgate.cli.main import main
from modelgate.storage import (
    MissingCredentials,
    ObjectStore,
    StorageCredentials,
    StorageError,
    StorageProblem,
    parse_object_url,
)
from tests.support.storage import SECRET, closed_port
from tests.support.telling_server import MARKER, telling_server

TOKEN = "FwoGZXIvYXdzEXAMPLETOKEN"
URL = parse_object_url("s3://sets/team-a/qa.jsonl")
BED = EgressPolicy(allow_loopback=True)


def credentials(endpoint: str | None) -> StorageCredentials:
    return StorageCredentials(endpoint, "us-east-1", "AKIAEXAMPLE", SECRET, TOKEN)


def failure(store: ObjectStore) -> StorageError:
    with pytest.raises(StorageError) as raised:
        asyncio.run(store.read(URL))
    return raised.value


def test_an_unreachable_endpoint_names_the_key_and_not_the_secret() -> None:
    error = failure(ObjectStore(credentials(f"http://127.0.0.1:{closed_port()}"), BED))
    assert error.problem is StorageProblem.UNREACHABLE
    assert str(URL) in str(error)
    assert SECRET not in str(error) and TOKEN not in str(error)


@pytest.mark.parametrize(
    ("endpoint", "policy"),
    [
        ("http://127.0.0.1:9000", EgressPolicy()),  # loopback outside a bed
        ("http://169.254.169.254", BED),  # cloud metadata
        ("http://user:hunter2@127.0.0.1:9000", BED),  # credentials in the URL
        ("http://127.0.0.1:9000/path", BED),  # not an origin
        ("ftp://127.0.0.1:9000", BED),
    ],
)
def test_a_refused_endpoint_is_an_error_naming_the_key_before_any_request(
    endpoint: str, policy: EgressPolicy
) -> None:
    error = failure(ObjectStore(credentials(endpoint), policy))
    assert error.problem is StorageProblem.REFUSED
    assert error.url == str(URL) and str(URL) in str(error)
    assert "hunter2" not in str(error) and SECRET not in str(error)


def test_plain_http_is_refused_beyond_loopback() -> None:
    """A routable address over http would send the signed requests (and a session token) in clear."""
    error = failure(ObjectStore(credentials("http://192.0.2.10:9000"), BED))
    assert error.problem is StorageProblem.REFUSED
    assert "https" in str(error)


def test_the_credentials_repr_holds_no_secret() -> None:
    shown = repr(credentials("https://s3.example"))
    assert SECRET not in shown and TOKEN not in shown
    assert "AKIAEXAMPLE" in shown


def test_credentials_from_the_environment_by_prefix() -> None:
    environ = {
        "MODELGATE_TEST_SET_S3_ENDPOINT_URL": "https://s3.example",
        "MODELGATE_TEST_SET_S3_ACCESS_KEY_ID": "AKIAEXAMPLE",
        "MODELGATE_TEST_SET_S3_SECRET_ACCESS_KEY": SECRET,
    }
    read = StorageCredentials.from_environment(environ, "MODELGATE_TEST_SET_S3_")
    assert (read.endpoint, read.region, read.session_token) == ("https://s3.example", "us-east-1", None)
    aws = StorageCredentials.from_environment(
        environ={"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S"}
    )
    assert aws.endpoint_url == "https://s3.us-east-1.amazonaws.com"


def test_missing_credentials_name_the_variable() -> None:
    with pytest.raises(MissingCredentials, match=r"\$X_SECRET_ACCESS_KEY"):
        StorageCredentials.from_environment({"X_ACCESS_KEY_ID": "A"}, "X_")


@pytest.mark.parametrize(
    ("status", "problem"), [(403, StorageProblem.CREDENTIALS), (500, StorageProblem.FAILED)]
)
def test_a_stores_error_answer_is_told_by_status_and_kind_never_by_its_body_or_endpoint(
    status: int, problem: StorageProblem
) -> None:
    with telling_server(status) as endpoint:
        error = failure(ObjectStore(credentials(endpoint), BED))
    assert (error.problem, error.status) == (problem, status)
    assert f"HTTP {status}" in str(error) and problem.value in str(error)
    assert MARKER not in str(error) and endpoint.removeprefix("http://") not in str(error)


@pytest.mark.usefixtures("loopback_allowed")
def test_a_stored_test_sets_error_answer_reaches_the_gate_check_without_its_body_or_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The summary is what the operator copies into status.gate.checks[].message."""
    monkeypatch.setattr(gate_eval, "configure_logging", lambda *args, **kwargs: None)
    result = tmp_path / "result.json"
    with telling_server(500) as endpoint, capture_logs() as logs:
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAEXAMPLE")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
        sides = ["--candidate=http://candidate.models:8000/v1", "--incumbent=http://incumbent.models:8000/v1"]
        assert main(["eval", *sides, f"--test-set={URL}", f"--result-file={result}"]) == 1
    summary = GateResult.model_validate_json(result.read_text()).summary or ""
    shown = [summary, capsys.readouterr().err, repr(logs)]
    for text in shown:
        assert MARKER not in text and endpoint.removeprefix("http://") not in text and SECRET not in text
    assert "HTTP 500" in summary and StorageProblem.FAILED.value in summary, summary
