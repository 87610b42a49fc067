"""The runtime contract in pyproject.toml covers every top-level module of the package: a new
module is either listed as the operator's (and then may not import the CLI, the evaluator or the
refusal proxy) or is one of those, or what only they share."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.unit.package_modules import modules

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
RUNTIME_CONTRACT = "the operator runtime imports neither the CLI, the evaluator nor the refusal proxy"
# Not the running operator: the CLI, the gate's evaluator, the refusal proxy, the answer reading,
# classifier and recordings' names only those two share, and `python -m modelgate`.
OUTSIDE_RUNTIME = {
    "modelgate.cli",
    "modelgate.evaluator",
    "modelgate.sidecar",
    "modelgate.storage",
    "modelgate.chat_answers",
    "modelgate.refusal_classifier",
    "modelgate.recordings",
    "modelgate.__main__",
}


def contract(name: str) -> dict[str, list[str]]:
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    return next(c for c in contracts if c["name"] == name)


def test_every_top_level_module_is_the_runtimes_or_named_outside_it() -> None:
    top_level = {".".join(m.name.split(".")[:2]) for m in modules() if m.name != "modelgate"}
    runtime = set(contract(RUNTIME_CONTRACT)["source_modules"])
    assert runtime & OUTSIDE_RUNTIME == set()
    assert top_level - OUTSIDE_RUNTIME == runtime
    assert set(contract(RUNTIME_CONTRACT)["forbidden_modules"]) == {
        "modelgate.cli",
        "modelgate.evaluator",
        "modelgate.sidecar",
        "modelgate.storage",
    }


def imported_by(*argv: str) -> set[str]:
    """The modelgate modules a real `python -m modelgate ARGV...` process imports (its -X importtime log)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    ran = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "modelgate", *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    names = (line.rpartition("|")[2].strip() for line in ran.stderr.splitlines() if "|" in line)
    return {name for name in names if name.startswith("modelgate")}


def test_the_operators_process_loads_neither_the_evaluator_nor_the_proxy() -> None:
    loaded = imported_by("run", "--help")
    assert "modelgate.reconciler" in loaded  # the operator's own code is what it loads
    packages = ("modelgate.evaluator", "modelgate.sidecar")
    outside = {name for name in loaded if ".".join(name.split(".")[:2]) in packages}
    assert outside == set()
    # the full CLI does load them: the check above is not vacuous
    assert "modelgate.evaluator.runner" in imported_by("--help")
