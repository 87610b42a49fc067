"""The modules and functions of modelgate that one realistic `decide()` runs through.

    python -m tooling.tick_footprint

The tick: a rollout in the pause after its first weight (20%), an analysis of two metrics due and
passing, driven by the engine unit tests' simulator (tests/unit/engine_support.py) as those tests
drive it. A profiler hook (sys.setprofile) records every function of the package called from the
moment `decide` is entered until it returns: functions written in its source, so neither
comprehensions and lambdas nor the `__init__` a dataclass generates. Issue 37
asks for these numbers before and after the engine's rework.
"""

from __future__ import annotations

import argparse
import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import modelgate
from modelgate.core import decide
from tests.unit.engine_support import Simulator, make_spec, timed_pause, weight

PACKAGE = "modelgate"
PACKAGE_DIRECTORY = str(Path(modelgate.__file__).resolve().parent) + os.sep
WIDTH = 80


@dataclass(frozen=True)
class Footprint:
    functions: frozenset[tuple[str, str]]  # (module, qualified name)

    @property
    def modules(self) -> list[str]:
        return sorted({module for module, _ in self.functions})

    def in_modules(self, prefix: str) -> list[str]:
        return [module for module in self.modules if module == prefix or module.startswith(prefix + ".")]

    def functions_of(self, module: str) -> list[str]:
        return sorted(name for owner, name in self.functions if owner == module)


def footprint(call: Callable[[], object], entry: CodeType) -> Footprint:
    """The package's functions run inside the first call of `entry` while `call()` runs."""
    seen: set[tuple[str, str]] = set()
    depth = 0
    finished = False

    def hook(frame: FrameType, event: str, _arg: Any) -> None:
        nonlocal depth, finished
        if finished or event not in ("call", "return"):
            return
        if event == "return":
            depth -= 1 if depth else 0
            finished = depth == 0 and frame.f_code is entry
            return
        if depth == 0 and frame.f_code is not entry:
            return
        depth += 1
        code = frame.f_code
        if code.co_filename.startswith(PACKAGE_DIRECTORY) and not code.co_name.startswith("<"):
            seen.add((frame.f_globals["__name__"], code.co_qualname))

    previous = sys.getprofile()
    sys.setprofile(hook)
    try:
        call()
    finally:
        sys.setprofile(previous)
    return Footprint(frozenset(seen))


def mid_step_simulator() -> Simulator:
    """A rollout in the timed pause after its 20% step, its next analysis due."""
    spec = make_spec(weight(20), timed_pause("10m"), weight(50), timed_pause("10m"), weight(100))
    sim = Simulator(spec)
    sim.start()
    sim.tick_with_analysis(after=timedelta(seconds=30))
    sim.advance(timedelta(seconds=30))
    if not sim.analysis_due():
        raise RuntimeError("the simulated rollout has no analysis due: the footprint would miss it")
    return sim


def tick_footprint() -> Footprint:
    sim = mid_step_simulator()
    return footprint(sim.tick_with_analysis, decide.__code__)


def render(found: Footprint) -> list[str]:
    core = found.in_modules(f"{PACKAGE}.core")
    core_functions = sum(len(found.functions_of(module)) for module in core)
    lines = [
        f"decide() mid-step, analysis due: {len(found.functions)} functions in "
        f"{len(found.modules)} modules of {PACKAGE}",
        f"core/ alone: {core_functions} functions in {len(core)} modules",
        "",
    ]
    for module in found.modules:
        names = found.functions_of(module)
        lines.append(f"{module} ({len(names)})")
        lines += textwrap.wrap(", ".join(names), WIDTH, initial_indent="  ", subsequent_indent="  ")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tooling.tick_footprint", description=__doc__)
    parser.parse_args(argv)
    print("\n".join(render(tick_footprint())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
