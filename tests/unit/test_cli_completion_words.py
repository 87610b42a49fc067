"""Completion from the cluster and in every shell: the words offered for a command line (commands,
options, choices, namespaces after -n, the namespace's rollouts where a command takes one), read
from an API server within a short timeout and silently without one; fish and `kubectl modelrollout
<TAB>` through the `kubectl_complete-modelrollout` executable."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from modelgate.cli.completion import script
from modelgate.cli.completion_words import NAMES_TIMEOUT, NAMESPACES, Offer, cluster_names, offer
from modelgate.cli.help_text import parser_of
from modelgate.cli.main import build_parser
from modelgate.cli.target import ROLLOUTS
from tests.support.json_api import json_api
from tests.unit.test_cli_cluster_errors import closed_port, kubeconfig

PARSER = build_parser()
BIN = Path(sys.executable).parent
ROLLOUTS_IN = {"serving": ["chat", "embed"], "staging": ["rerank"]}  # serving: the kubeconfig's
asked: list[tuple[str, str | None, Path | None]] = []


def names(kind: str, namespace: str | None, config: Path | None) -> list[str]:
    """The cluster as the completer reads it, remembering what it was asked."""
    asked.append((kind, namespace, config))
    return list(ROLLOUTS_IN) if kind == NAMESPACES else ROLLOUTS_IN.get(namespace or "serving", [])


def offered(*words: str) -> Offer:
    asked.clear()
    return offer(list(words), lambda command: parser_of(PARSER, command), names)


def test_commands_options_and_choices() -> None:
    assert offered("st").words == ("status",)
    assert {"--watch", "--timeout"} <= set(offered("status", "--").words)
    assert offered("get", "-o", "").words == ("json", "table")
    assert offered("report", "-o", "") == Offer((), files=True)  # a file name: the shell's own


def test_a_namespace_after_n_comes_from_the_cluster() -> None:
    assert offered("status", "-n", "s").words == ("serving", "staging")
    assert offered("run", "--namespace", "st").words == ("staging",)


def test_a_commands_rollout_is_one_of_the_namespace_named_on_the_line() -> None:
    assert offered("promote", "-n", "staging", "").words == ("rerank",)
    assert asked[-1][:2] == (ROLLOUTS, "staging")
    assert offered("status", "-w", "").words == ("chat", "embed")  # -w takes no value: NAME is next
    assert asked[-1][1] is None  # the kubeconfig's namespace


def test_the_kubeconfig_on_the_line_is_the_one_asked() -> None:
    offered("abort", "--kubeconfig", "/tmp/kc", "")
    assert asked[-1][2] == Path("/tmp/kc")


def test_no_names_once_the_rollout_is_given_nor_for_a_command_without_one() -> None:
    assert offered("promote", "chat", "") == Offer((), files=True)
    assert offered("plan", "") == Offer((), files=True)
    assert not asked


def listed(path: str) -> tuple[int, dict[str, Any]]:
    """An API server holding two namespaces and two rollouts in `serving`."""
    if path.startswith("/api/v1/namespaces"):
        items = [{"metadata": {"name": name}} for name in ("serving", "staging")]
        return 200, {"kind": "NamespaceList", "apiVersion": "v1", "metadata": {}, "items": items}
    if "/namespaces/serving/modelrollouts" in path:
        return 200, {"items": [{"metadata": {"name": "chat"}}, {"metadata": {"name": "embed"}}]}
    return 200, {"items": []}


@pytest.fixture
def api_server() -> Iterator[str]:
    with json_api(listed) as url:
        yield url


def test_names_are_read_from_the_api_server(tmp_path: Path, api_server: str) -> None:
    config = kubeconfig(tmp_path, api_server)  # its context's namespace: serving
    assert cluster_names(NAMESPACES, None, config) == ["serving", "staging"]
    assert cluster_names(ROLLOUTS, None, config) == ["chat", "embed"]
    assert cluster_names(ROLLOUTS, "staging", config) == []


def test_without_a_cluster_nothing_is_offered_and_nothing_said(tmp_path: Path) -> None:
    assert cluster_names(ROLLOUTS, None, tmp_path / "absent") == []
    assert cluster_names(NAMESPACES, None, kubeconfig(tmp_path, f"http://127.0.0.1:{closed_port()}")) == []


def test_a_server_that_never_answers_is_given_up_on_soon(tmp_path: Path) -> None:
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        config = kubeconfig(tmp_path, f"http://127.0.0.1:{silent.getsockname()[1]}")
        started = time.monotonic()
        assert cluster_names(ROLLOUTS, None, config) == []
        assert time.monotonic() - started < NAMES_TIMEOUT + 1.5  # one try: a shell is waiting


def with_our_programs() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}


FISH = shutil.which("fish")


@pytest.mark.skipif(FISH is None, reason="no fish to complete in")
def test_fish_completes_through_the_completer(tmp_path: Path) -> None:
    loaded = tmp_path / "modelgate.fish"
    loaded.write_text(script(PARSER, "fish"))
    assert FISH is not None

    def fish(line: str) -> set[str]:
        program = f"source {loaded}; complete -C '{line}'"
        done = subprocess.run(
            [FISH, "-c", program], capture_output=True, text=True, env=with_our_programs(), check=True
        )
        return {entry.split("\t")[0] for entry in done.stdout.splitlines()}

    assert fish("modelgate sta") == {"status"}
    assert fish("kubectl-modelrollout get -o ") == {"json", "table"}
    (tmp_path / "rollout.yaml").write_text("")
    assert str(tmp_path / "rollout.yaml") in fish(
        f"modelgate plan -f {tmp_path}/rol"
    )  # a file where one goes


KUBECTL = shutil.which("kubectl")


@pytest.mark.skipif(KUBECTL is None, reason="no kubectl")
def test_kubectl_completes_the_plugin() -> None:
    """kubectl (1.26 or later) finds `kubectl_complete-modelrollout` on PATH beside the plugin."""
    assert KUBECTL is not None
    done = subprocess.run(
        [KUBECTL, "__complete", "modelrollout", "sta"],
        capture_output=True,
        text=True,
        env=with_our_programs(),
        check=True,
    )
    assert done.stdout.splitlines()[0] == "status"
    listed = subprocess.run(
        [KUBECTL, "__complete", "modelrollout", "get", "-o", ""],
        capture_output=True,
        text=True,
        env=with_our_programs(),
        check=True,
    )
    assert set(listed.stdout.splitlines()[:2]) == {"json", "table"}
