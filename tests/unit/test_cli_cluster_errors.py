"""Without a cluster to ask, `modelgate` says why in one line and exits 1, never with a traceback: no
kubeconfig, an API server nobody listens for, and one that refuses the user (no RBAC)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelgate.cli.exit_codes import ExitCode
from modelgate.cli.main import main
from tests.support.json_api import json_api

FORBIDDEN = 'modelrollouts.modelgate.io "chat" is forbidden: User "dev" cannot get resource "modelrollouts"'


def kubeconfig(tmp_path: Path, server: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u", "namespace": "serving"}}],
                "current-context": "x",
            }
        )
    )
    return path


def said(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str]]:
    code = main(list(argv))
    return code, capsys.readouterr().err.strip().splitlines()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again when the block ends


def refusing(path: str) -> tuple[int, dict[str, Any]]:
    """An API server whose RBAC grants this user nothing."""
    return 403, {"kind": "Status", "status": "Failure", "message": FORBIDDEN, "code": 403}


@pytest.fixture
def refusing_server() -> Iterator[str]:
    with json_api(refusing) as url:
        yield url


def test_a_missing_kubeconfig_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-kubeconfig"
    code, lines = said(capsys, "status", "chat", "--kubeconfig", str(missing))
    assert code == ExitCode.ERROR
    assert len(lines) == 1 and str(missing) in lines[0], lines


def test_an_unreachable_api_server_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = kubeconfig(tmp_path, f"http://127.0.0.1:{closed_port()}")
    code, lines = said(capsys, "get", "--kubeconfig", str(config))
    assert code == ExitCode.ERROR
    assert len(lines) == 1 and "cannot reach the Kubernetes API server" in lines[0], lines


def test_no_rbac_is_one_line_saying_which_rights_to_ask_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], refusing_server: str
) -> None:
    code, lines = said(capsys, "status", "chat", "--kubeconfig", str(kubeconfig(tmp_path, refusing_server)))
    assert code == ExitCode.ERROR
    assert len(lines) == 1 and FORBIDDEN in lines[0] and "RBAC" in lines[0], lines


def one_sentence(line: str) -> bool:
    """A single sentence: ends with a full stop, and no other sentence ends inside it."""
    return line.endswith(".") and ". " not in line and "Errno" not in line


def test_a_kubeconfig_missing_from_kubeconfig_env_is_one_sentence_naming_it_and_the_way_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere"
    monkeypatch.setenv("KUBECONFIG", str(missing))
    code, lines = said(capsys, "get")
    assert code == ExitCode.ERROR
    assert len(lines) == 1 and one_sentence(lines[0]), lines
    assert str(missing) in lines[0] and "--kubeconfig" in lines[0]


@pytest.mark.parametrize(
    "command",
    [["plan", "--rps", "1", "--base-rate", "0.01"], ["gate"], ["replay", "--from", "now-1h"]],
    ids=lambda argv: argv[0],
)
@pytest.mark.parametrize("kind", ["missing", "directory"])
def test_a_manifest_that_cannot_be_read_is_one_sentence_naming_it(
    command: list[str],
    kind: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # the sentence, not where a terminal would wrap it
    path = tmp_path / "rollout.yaml"
    if kind == "directory":
        path.mkdir()
    code = main([*command, "-f", str(path)])
    output = capsys.readouterr()
    lines = (output.err + output.out).strip().splitlines()
    assert code != 0
    assert len(lines) == 1 and str(path) in lines[0], lines
    assert one_sentence(lines[0].removeprefix(f"modelgate {command[0]}: ")), lines
