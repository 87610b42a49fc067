"""One switch for loopback: `report`, `replay`, `eval` and `evaluations -o s3://` refuse a URL on
127.0.0.1 alike, saying which switch allows it (--allow-loopback, $MODELGATE_ALLOW_LOOPBACK), and
ask it with either; the switch opens loopback only. `run`'s operator builds its policies from the
same setting."""

from __future__ import annotations

import ipaddress
import json
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from modelgate.api.addresses import ALLOW_LOOPBACK_ENV, ALLOW_LOOPBACK_FLAG, Refusal
from modelgate.cli import evaluations, gate_eval, run
from modelgate.cli.main import main
from modelgate.cli.report import report
from modelgate.egress import API_SERVER_ENV
from modelgate.kube import Kube
from testbed.manifests import SEED_METRICS, model_rollout

METADATA = "http://169.254.169.254"


@dataclass
class Listener:
    """A server on 127.0.0.1 answering every request as Prometheus with no series; what was asked."""

    url: str
    asked: list[str] = field(default_factory=list)


@pytest.fixture
def listener() -> Iterator[Listener]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            served.asked.append(self.path)
            kind = "matrix" if "query_range" in self.path else "vector"
            body = json.dumps({"status": "success", "data": {"resultType": kind, "result": []}}).encode()
            self.send_response(200)
            self.send_header("ETag", '"1"')  # an object store's answer to a PUT
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_POST = do_PUT = do_GET

        def log_message(self, *_: object) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    served = Listener(f"http://127.0.0.1:{http.server_address[1]}")
    threading.Thread(target=http.serve_forever, daemon=True).start()
    yield served
    http.shutdown()
    http.server_close()


@pytest.fixture(autouse=True)
def no_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Loopback refused unless a test allows it; the setting a flag writes is undone after each."""
    monkeypatch.setenv(ALLOW_LOOPBACK_ENV, "false")
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(gate_eval, "configure_logging", lambda *args, **kwargs: None)


class RolloutOnly:
    """The API server as `report` reads it: the rollout, no Events."""

    server_url = "https://10.96.0.1:443"

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body

    def get_custom(self, *_: str) -> dict[str, Any]:
        return self.body

    def list_events(self, *_: str) -> list[dict[str, Any]]:
        return []


def _rollout(prometheus: str) -> dict[str, Any]:
    body = model_rollout("chat", "ml", steps=[{"setWeight": 20}], prometheus=prometheus, metrics=SEED_METRICS)
    created = datetime.now(UTC) - timedelta(minutes=5)
    body["metadata"]["creationTimestamp"] = created.isoformat().replace("+00:00", "Z")
    return body


def _report(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    kube = cast(Kube, RolloutOnly(_rollout(url)))
    monkeypatch.setattr(report, "connect", lambda args: (kube, "ml"))
    return ["report", "chat", "-o", str(tmp_path / "chat.html")]


def _replay(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    manifest = tmp_path / "rollout.yaml"
    manifest.write_text(yaml.safe_dump(_rollout(url)))
    return ["replay", "-f", str(manifest), "--from", "now-5m"]


def _eval(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    endpoints = [f"--candidate={url}/v1", f"--incumbent={url}/v1", f"--test-set={url}/set"]
    return ["eval", *endpoints, "--timeout=2s", "--retries=0", f"--result-file={tmp_path / 'r.json'}"]


def _evaluations(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """`-o s3://...` with the endpoint at `url`, as a MinIO on this machine."""
    body = {"metadata": {"name": "quality"}, "spec": {"schedule": "@daily"}, "status": {}}
    monkeypatch.setattr(evaluations, "connect", lambda args: (RolloutOnly(body), "ml"))
    for name, value in {"ENDPOINT_URL": url, "REGION": "us-east-1", "ACCESS_KEY_ID": "a"}.items():
        monkeypatch.setenv(f"AWS_{name}", value)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    return ["evaluations", "quality", "-o", "s3://histories/quality.json"]


Command = Callable[[str, Path, pytest.MonkeyPatch], list[str]]
COMMANDS: dict[str, Command] = {
    "report": _report,
    "replay": _replay,
    "eval": _eval,
    "evaluations": _evaluations,
}


def said(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    return " ".join((captured.out + captured.err).split())


@pytest.mark.parametrize("command", COMMANDS)
def test_a_loopback_url_is_refused_without_the_switch_and_the_refusal_names_it(
    command: str,
    listener: Listener,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(COMMANDS[command](listener.url, tmp_path, monkeypatch))
    out = said(capsys)
    assert code == 1, out
    assert ALLOW_LOOPBACK_FLAG in out and ALLOW_LOOPBACK_ENV in out, out
    assert listener.asked == []


@pytest.mark.parametrize("switch", ["flag", "environment"])
@pytest.mark.parametrize("command", COMMANDS)
def test_either_switch_lets_a_command_ask_a_loopback_url(
    command: str,
    switch: str,
    listener: Listener,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = COMMANDS[command](listener.url, tmp_path, monkeypatch)
    if switch == "environment":
        monkeypatch.setenv(ALLOW_LOOPBACK_ENV, "true")
    code = main([*argv, *([ALLOW_LOOPBACK_FLAG] if switch == "flag" else [])])
    out = said(capsys)
    assert listener.asked, out
    assert Refusal.LOOPBACK.value not in out
    if command != "eval":  # eval's listener is no model server: it asked, and could not measure
        assert code == 0, out


@pytest.mark.parametrize("command", COMMANDS)
def test_the_switch_opens_loopback_only(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if command in ("report", "replay"):  # on the command line: the schema refuses a rollout's own
        argv = [*COMMANDS[command]("http://127.0.0.1:9", tmp_path, monkeypatch), "--prometheus", METADATA]
    else:
        argv = COMMANDS[command](METADATA, tmp_path, monkeypatch)
    code = main([*argv, ALLOW_LOOPBACK_FLAG])
    out = said(capsys)
    assert code == 1 and "link-local" in out, out


def test_runs_switch_reaches_the_operators_policies_and_its_evaluator_jobs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`run` builds its Prometheus client's policy and its evaluator Jobs' environment from the
    process's setting, which the flag sets before the operator starts."""
    seen: list[tuple[Refusal | None, dict[str, str]]] = []

    def operator(args: object) -> int:
        config = run.operator_config(RolloutOnly.server_url, os.environ)
        refusal = config.egress.refusal(ipaddress.ip_address("::1"), 9090)
        seen.append((refusal, dict(config.evaluator_env or {})))
        return 0

    monkeypatch.setattr(run, "run_operator", operator)
    monkeypatch.delenv(API_SERVER_ENV, raising=False)
    assert main(["run"]) == 0
    assert main(["run", ALLOW_LOOPBACK_FLAG]) == 0
    (refused, plain), (allowed, switched) = seen
    assert refused is Refusal.LOOPBACK and ALLOW_LOOPBACK_ENV not in plain
    assert allowed is None and switched[ALLOW_LOOPBACK_ENV] == "true"
