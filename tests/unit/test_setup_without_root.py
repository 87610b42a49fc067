"""Set-up without root where possible: hack/apt-deps.sh runs apt only for a tool missing from PATH,
and without apt, root or sudo names what to install in one sentence; `make cluster-up` builds and
installs only what the bed runs (hack/build-bins.sh bed), not the suite's helm, actionlint or
chromium. Runs against stand-in tools in a temporary PATH; nothing is installed or built."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from testbed.versions import REPO_ROOT

APT_DEPS = REPO_ROOT / "hack" / "apt-deps.sh"
BUILD_BINS = REPO_ROOT / "hack" / "build-bins.sh"
# What testbed/localcluster.py starts (and kubectl, which installs the CRDs), besides Prometheus.
BED_BINARIES = {"etcd", "kwok", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl"}
BASH = shutil.which("bash") or "/bin/bash"
# Logs its own name and arguments, then succeeds: stands in for apt-get, sudo, prometheus...
RECORDING_TOOL = '#!/bin/sh\necho "${0##*/} $*" >>"$TOOL_LOG"\n'
# `go build -o OUT PKG` and `go install PKG@V` (into $GOBIN) as build-bins.sh calls them: writes a
# script where the binary would go and logs the package.
FAKE_GO = """#!/bin/sh
out=""; prev=""
for arg; do [ "$prev" = "-o" ] && out=$arg; prev=$arg; done
pkg=$arg
[ -n "$out" ] || out="$GOBIN/$(basename "${pkg%@*}")"
printf '#!/bin/sh\\n' >"$out" && chmod +x "$out"
echo "$pkg" >>"$TOOL_LOG"
"""


def tools_dir(tmp_path: Path, names: list[str], uid: int) -> Path:
    """A PATH holding only `names` (recording stand-ins) and an `id` that says `uid`."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for name in names:
        (tools / name).write_text(RECORDING_TOOL)
    (tools / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    for tool in tools.iterdir():
        tool.chmod(0o755)
    return tools


def apt_deps(tmp_path: Path, on_path: list[str], uid: int, *needed: str) -> tuple[int, str, list[str]]:
    tools = tools_dir(tmp_path, on_path, uid)
    log = tmp_path / "tools.log"
    env = {"PATH": str(tools), "TOOL_LOG": str(log)}
    done = subprocess.run(
        [BASH, str(APT_DEPS), "demo", *needed], env=env, capture_output=True, text=True, timeout=30
    )
    calls = log.read_text().splitlines() if log.exists() else []
    return done.returncode, done.stderr, calls


def test_tools_already_on_path_need_no_apt(tmp_path: Path) -> None:
    code, _, calls = apt_deps(tmp_path, ["prometheus", "apt-get", "sudo"], 1000, "prometheus")
    assert code == 0
    assert calls == []  # neither apt-get nor sudo ran


def test_a_missing_tool_is_installed_with_sudo_when_not_root(tmp_path: Path) -> None:
    code, _, calls = apt_deps(tmp_path, ["prometheus", "apt-get", "sudo"], 1000, "prometheus", "shellcheck")
    assert code == 0
    assert calls[0] == "sudo apt-get update -qq"
    assert calls[-1].startswith("sudo apt-get install") and calls[-1].endswith(" shellcheck")


def test_root_installs_without_sudo(tmp_path: Path) -> None:
    code, _, calls = apt_deps(tmp_path, ["apt-get"], 0, "prometheus")
    assert code == 0
    assert [call.split()[:2] for call in calls] == [["apt-get", "update"], ["apt-get", "install"]]


@pytest.mark.parametrize(
    ("on_path", "uid", "reason"),
    [(["apt-get"], 1000, "without root or sudo"), (["sudo"], 1000, "no apt-get"), ([], 0, "no apt-get")],
)
def test_what_cannot_be_installed_is_named_in_one_sentence(
    tmp_path: Path, on_path: list[str], uid: int, reason: str
) -> None:
    code, stderr, calls = apt_deps(tmp_path, on_path, uid, "prometheus")
    assert code == 1
    assert calls == []
    message = stderr.strip()
    assert "\n" not in message and message.count(": ") == 1 and reason in message
    assert "install prometheus" in message and "docs/setup.md" in message


def make_dry_run(target: str) -> list[str]:
    # -o: the venv is the same for every target; its recipe is not what is checked here.
    done = subprocess.run(
        ["make", "-n", "-o", "venv", "-o", ".venv/.installed", target],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.splitlines()


def installs_and_builds(lines: list[str]) -> tuple[list[str], list[str]]:
    """The tools apt-deps is asked for, and the build-bins.sh sets, in `make -n`'s output."""
    tools = [w for line in lines if (m := re.search(r"apt-deps\.sh \S+ (.*)", line)) for w in m[1].split()]
    sets = [m[1] for line in lines if (m := re.search(r"build-bins\.sh (\S+)", line))]
    return tools, sets


def test_cluster_up_asks_only_for_what_the_bed_runs() -> None:
    tools, sets = installs_and_builds(make_dry_run("cluster-up"))
    assert tools == ["prometheus"]
    assert sets == ["bed"]


def test_the_suite_still_gets_its_tools() -> None:
    tools, sets = installs_and_builds(make_dry_run("setup"))
    assert {"prometheus", "shellcheck", "chromium"} <= set(tools)
    assert sets == ["all"]


def test_the_bed_set_builds_the_control_plane_alone(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "go").write_text(FAKE_GO)
    (tools / "go").chmod(0o755)
    cache, log = tmp_path / "cache", tmp_path / "go.log"
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}", "MODELGATE_CACHE": str(cache)}
    done = subprocess.run(
        [BASH, str(BUILD_BINS), "bed"],
        env={**env, "TOOL_LOG": str(log)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    built = {line.split("@")[0].removesuffix("/server/v3") for line in log.read_text().splitlines()}
    assert {Path(package).name for package in built} == BED_BINARIES
    linked = {path.name for path in (cache / "bin").iterdir()} - {"SHA256SUMS"}
    assert linked == BED_BINARIES
