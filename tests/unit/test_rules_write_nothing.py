"""No rule writes its tick: outside the engine and its fold (core/engine.py) and the accumulator
itself (core/tick.py), a core function that takes a Tick only reads it. The scan counts,
per module, the calls of the tick's writing methods, the attributes assigned on it, and the calls of
the fold: 0 in every one."""

from __future__ import annotations

import ast
from pathlib import Path

import modelgate.core

CORE = Path(modelgate.core.__file__).parent
ALLOWED_TO_WRITE = frozenset({"engine.py", "tick.py"})
WRITING_METHODS = frozenset(
    {
        "update",
        "event",
        "condition",
        "pause",
        "unpause",
        "end_pauses",
        "set_weight",
        "note",
        "route_state",
        "fail",
        "succeed",
        "rollback",
        "enter_step",
        "apply",
        "advance_while_complete",
    }
)
FOLDS = frozenset({"fold", "fold_hold"})


def tick_writes(source: str) -> int:
    count = 0
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, ast.FunctionDef):
            continue
        ticks = {a.arg for a in function.args.args if _names_tick(a.annotation)}
        for node in ast.walk(function):
            if isinstance(node, ast.Call):
                count += _writing_call(node.func, ticks)
            elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                count += sum(_on(target, ticks) for target in targets)
    return count


def _names_tick(annotation: ast.expr | None) -> bool:
    return (isinstance(annotation, ast.Name) and annotation.id == "Tick") or (
        isinstance(annotation, ast.Constant) and annotation.value == "Tick"
    )


def _writing_call(called: ast.expr, ticks: set[str]) -> bool:
    if isinstance(called, ast.Name):
        return called.id in FOLDS
    return isinstance(called, ast.Attribute) and called.attr in WRITING_METHODS and _on(called, ticks)


def _on(target: ast.expr, ticks: set[str]) -> bool:
    return (
        isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id in ticks
    )


def test_the_scan_sees_a_write() -> None:
    written = (
        "def rule(tick: Tick) -> None:\n"
        "    tick.update(message='x')\n"
        "    tick.weight = 3\n"
        "    fold(tick, ())\n"
        "    other.update(x=1)\n"
        "def pure(view: Tick) -> int:\n"
        "    return view.status.current_weight\n"
    )
    assert tick_writes(written) == 3


def test_no_core_module_writes_a_tick_but_the_engine() -> None:
    counted = {
        path.name: writes
        for path in sorted(CORE.glob("*.py"))
        if path.name not in ALLOWED_TO_WRITE and (writes := tick_writes(path.read_text()))
    }
    assert counted == {}
