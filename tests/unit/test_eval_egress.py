"""What `modelgate eval` refuses to fetch: URLs the egress policy refuses (before any request, and
whatever a name resolves to), redirects, files outside the Job's mounts, and jsonSchema references
outside the test set."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from modelgate.api.gate_result import GateResult
from modelgate.cli import gate_eval
from modelgate.cli.main import main
from modelgate.evaluator.answer_checks import JsonSchemaCheck
from tests.support.disguised_hosts import LOOPBACK_FORMS

HEADER = {"testSet": {"name": "qa", "version": "1", "date": "2026-11-28T00:00:00Z"}}
ITEM = {"id": "m1", "capability": "math", "prompt": "6 x 7?", "check": {"number": 42}}


@pytest.fixture(autouse=True)
def process_logging_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gate_eval, "configure_logging", lambda *args, **kwargs: None)


@pytest.fixture
def server() -> Iterator[list[str]]:
    """A server on 127.0.0.1 that records every path asked and redirects /redirect to /set."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            if self.path == "/redirect":
                self.send_response(302)
                self.send_header("Location", "/set")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            body = "\n".join(json.dumps(line) for line in (HEADER, ITEM)).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    asked.append(f"http://127.0.0.1:{http.server_address[1]}")  # the first entry: its URL
    yield asked
    http.shutdown()
    http.server_close()


def failed_eval(tmp_path: Path, *args: str) -> str:
    """The summary of a run that could not measure."""
    result = tmp_path / "result.json"
    endpoints = ["--candidate=http://candidate.models:8000/v1", "--incumbent=http://incumbent.models:8000/v1"]
    assert main(["eval", *endpoints, *args, f"--result-file={result}"]) == 1
    return GateResult.model_validate_json(result.read_text()).summary


@pytest.mark.parametrize("path", ["/set", "/redirect"])
def test_a_loopback_url_is_refused_without_a_request(tmp_path: Path, server: list[str], path: str) -> None:
    base = server[0]
    summary = failed_eval(tmp_path, f"--test-set={base}{path}")
    assert "--test-set: refused" in summary and "loopback" in summary, summary
    assert server[1:] == []


@pytest.mark.parametrize("host", LOOPBACK_FORMS)
def test_a_disguised_loopback_url_is_refused_without_a_request(
    tmp_path: Path, server: list[str], host: str
) -> None:
    base = server[0].replace("127.0.0.1", host)
    summary = failed_eval(tmp_path, f"--test-set={base}/set", f"--judge={base}/v1")
    assert "--test-set: refused" in summary and "loopback" in summary, summary
    assert server[1:] == []


@pytest.mark.parametrize(
    "url",
    ["http://[::ffff:169.254.169.254]/latest/meta-data/", "http://2852039166/", "http://admin:pw@models/"],
)
def test_a_metadata_url_or_one_with_a_password_is_refused(tmp_path: Path, url: str) -> None:
    summary = failed_eval(tmp_path, f"--judge={url}", f"--test-set={url}")
    assert "refused" in summary and "pw" not in summary, summary


@pytest.mark.usefixtures("loopback_allowed")
def test_a_redirect_is_not_followed(tmp_path: Path, server: list[str]) -> None:
    summary = failed_eval(tmp_path, f"--test-set={server[0]}/redirect")
    assert "HTTP 302" in summary, summary
    assert server[1:] == ["/redirect"]


def test_a_file_outside_the_mount_is_refused(tmp_path: Path) -> None:
    mount = tmp_path / "mount"
    mount.mkdir()
    secret = tmp_path / "token"
    secret.write_text("s3cret")
    (mount / "set.jsonl").symlink_to(secret)
    for path in (mount / "set.jsonl", mount / ".." / "token"):
        summary = failed_eval(tmp_path, f"--test-set={path}", f"--inputs-within={mount}")
        assert "outside the volume" in summary and "s3cret" not in summary, summary


def test_a_json_schema_resolves_references_inside_itself_only() -> None:
    local = JsonSchemaCheck.of({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"})
    assert local.passes("42") and not local.passes('"42"')
    for ref in ("http://127.0.0.1:1/schema.json", "file:///etc/passwd", "other.json#/x"):
        with pytest.raises(ValueError, match="only references inside the schema"):
            JsonSchemaCheck.of({"properties": {"a": {"$ref": ref}}})
