"""docs/troubleshooting.md describes every condition reason, event reason and rollback cause the
operator can set, every condition type and every phase.

The reasons are collected from the source, not from a list kept by hand: every function or class of
the operator with a `str` parameter or field named `reason` or `*_reason` is a place a reason enters,
and the argument at that position in every call is resolved to its string values (a literal, a
conditional expression of literals, or a module-level constant). An argument that cannot be resolved
fails the test, unless it passes on a value resolved where it was created: a parameter of an
enclosing function, or an attribute named `reason` (as in `problem.reason`).
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from modelgate.api import Phase
from modelgate.core import conditions

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "operator" / "modelgate"
DOC = ROOT / "docs" / "troubleshooting.md"
# The local test bed is not the operator: it sets no conditions and records no events.
EXCLUDED_DIRS = ("testbed",)
# Callables with a parameter named like a reason that carries something else.
NOT_REASONS = {
    ("api/errors.py", "FieldPathError"): "the text of a validation error",
}

Modules = list[tuple[str, ast.Module]]  # (path relative to the package, parsed source)
Function = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


@dataclass(frozen=True)
class ReasonParameter:
    where: str  # file:callable
    index: int | None  # position at call sites, without self; None: keyword only
    keyword: str


@dataclass(frozen=True)
class Reason:
    value: str
    where: str  # file:line of the call


class UnresolvedReason(Exception):
    """A reason argument whose value the scan cannot determine."""


def operator_sources() -> Modules:
    modules = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative.split("/")[0] not in EXCLUDED_DIRS:
            modules.append((relative, ast.parse(path.read_text(), filename=str(path))))
    return modules


def _takes_reason(arg: ast.arg) -> bool:
    named = arg.arg == "reason" or arg.arg.endswith("_reason")
    annotation = arg.annotation
    is_str = annotation is not None and any(
        isinstance(node, ast.Name) and node.id == "str" for node in ast.walk(annotation)
    )
    return named and is_str


def _signature(
    node: ast.AST, classes: dict[ast.AST, str]
) -> tuple[str, list[tuple[int | None, ast.arg]]] | None:
    """(callable name, [(position, parameter)]) of a function, method or class (by its fields)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        positional = [*node.args.posonlyargs, *node.args.args]
        if positional and positional[0].arg in ("self", "cls"):
            positional = positional[1:]
        named: list[tuple[int | None, ast.arg]] = [*enumerate(positional)]
        named += [(None, a) for a in node.args.kwonlyargs]
        name = classes.get(node, node.name) if node.name == "__init__" else node.name
        return name, named
    if isinstance(node, ast.ClassDef):
        fields = [
            ast.arg(arg=s.target.id, annotation=s.annotation)
            for s in node.body
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
        ]
        return node.name, [*enumerate(fields)]
    return None


def reason_parameters(modules: Modules) -> dict[str, ReasonParameter]:
    """Callable name -> where its reason goes."""
    found: dict[str, ReasonParameter] = {}
    for relative, module in modules:
        inits: dict[ast.AST, str] = {
            item: node.name
            for node in ast.walk(module)
            if isinstance(node, ast.ClassDef)
            for item in node.body
        }
        for node in ast.walk(module):
            signature = _signature(node, inits)
            if signature is None or (relative, signature[0]) in NOT_REASONS:
                continue
            name, named = signature
            for index, arg in named:
                if not _takes_reason(arg):
                    continue
                parameter = ReasonParameter(f"{relative}:{name}", index, arg.arg)
                previous = found.setdefault(name, parameter)
                if previous != parameter:
                    raise UnresolvedReason(
                        f"{previous.where} and {parameter.where} both take a reason, at different "
                        "places; rename one so that their calls can be told apart"
                    )
    return found


def _string_constants(modules: Modules) -> dict[str, str]:
    constants: dict[str, str] = {}
    for _, module in modules:
        for statement in module.body:
            if (
                isinstance(statement, ast.Assign)
                and isinstance(statement.value, ast.Constant)
                and isinstance(statement.value.value, str)
            ):
                for target in statement.targets:
                    if isinstance(target, ast.Name):
                        constants[target.id] = statement.value.value
    return constants


def _ours(module: str) -> bool:
    return module == "modelgate" or module.startswith("modelgate.")


def _external_names(module: ast.Module) -> set[str]:
    """Names a module binds to other packages (`import kopf`, `from structlog import get_logger`)."""
    names = set()
    for node in module.body:
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if not _ours(a.name)}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and not _ours(node.module or ""):
            names |= {a.asname or a.name for a in node.names}
    return names


def _callee(call: ast.Call, external: set[str]) -> str | None:
    """The called name, or None for a call into another package (e.g. `kopf.on.event(...)`)."""
    root: ast.expr = call.func
    while isinstance(root, ast.Attribute | ast.Call):
        root = root.value if isinstance(root, ast.Attribute) else root.func
    if isinstance(root, ast.Name) and root.id in external:
        return None
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _parameters(function: Function) -> set[str]:
    args = function.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    return names | {a.arg for a in (args.vararg, args.kwarg) if a is not None}


def _calls(node: ast.AST, parameters: frozenset[str]) -> Iterator[tuple[ast.Call, frozenset[str]]]:
    """Every call below `node`, with the parameters of the functions it is in (closures included)."""
    for child in ast.iter_child_nodes(node):
        inner = parameters
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            inner = parameters | _parameters(child)
        if isinstance(child, ast.Call):
            yield child, parameters
        yield from _calls(child, inner)


def _resolve(
    expression: ast.expr, constants: dict[str, str], parameters: frozenset[str], where: str
) -> list[str]:
    """The strings `expression` can be; [] for a value passed on from elsewhere."""
    if isinstance(expression, ast.Constant) and isinstance(expression.value, str):
        return [expression.value]
    if isinstance(expression, ast.IfExp):
        return [
            *_resolve(expression.body, constants, parameters, where),
            *_resolve(expression.orelse, constants, parameters, where),
        ]
    if isinstance(expression, ast.Name):
        if expression.id in constants:
            return [constants[expression.id]]
        if expression.id in parameters:
            return []  # passed on: the callers' arguments are checked
    if isinstance(expression, ast.Attribute):
        if expression.attr in constants:
            return [constants[expression.attr]]
        if expression.attr == "reason":
            return []  # e.g. problem.reason: checked where the object was created
    raise UnresolvedReason(
        f"{where}: cannot tell which reason `{ast.unparse(expression)}` is; pass a string literal or a "
        "module-level constant, so that tests/unit/test_docs_troubleshooting.py can check its docs"
    )


def collect_reasons(modules: Modules) -> list[Reason]:
    """Every reason value passed to a reason parameter anywhere in `modules`."""
    parameters_by_callee = reason_parameters(modules)
    constants = _string_constants(modules)
    reasons = []
    for relative, module in modules:
        external = _external_names(module)
        for call, parameters in _calls(module, frozenset()):
            parameter = parameters_by_callee.get(_callee(call, external) or "")
            if parameter is None:
                continue
            argument = next((k.value for k in call.keywords if k.arg == parameter.keyword), None)
            if argument is None and parameter.index is not None and parameter.index < len(call.args):
                argument = call.args[parameter.index]
            if argument is None:
                continue  # a same-named callable without that argument, e.g. conditions.condition()
            where = f"{relative}:{call.lineno}"
            reasons += [Reason(value, where) for value in _resolve(argument, constants, parameters, where)]
    return reasons


def operator_reasons() -> list[Reason]:
    try:
        return collect_reasons(operator_sources())
    except UnresolvedReason as error:
        pytest.fail(str(error))


def documented(doc: str, name: str) -> bool:
    return re.search(rf"`{re.escape(name)}`", doc) is not None


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text()


def test_every_reason_is_documented(doc: str) -> None:
    missing = sorted({f"{r.value} ({r.where})" for r in operator_reasons() if not documented(doc, r.value)})
    assert not missing, f"describe these reasons in {DOC.relative_to(ROOT)}: {', '.join(missing)}"


def test_the_scan_finds_each_way_a_reason_is_set() -> None:
    found = {reason.value for reason in operator_reasons()}
    assert {
        "RouteFound",  # a literal, to a condition
        "NotAvailable",  # a conditional expression
        "PrometheusUnavailable",  # a module-level constant
        "BackendNotFound",  # RouteProblem(...), a dataclass
        "NewRollout",  # start_rollout(reason, ...)
        "RolloutSucceeded",  # event(...)
        "MetricBreach",  # rollback(..., condition_reason)
        "InvalidSpec",  # kube.create_event(...) in the reconciler
    } <= found


def _scan(source: str) -> set[str]:
    return {r.value for r in collect_reasons([("example.py", ast.parse(textwrap.dedent(source)))])}


def test_the_scan_follows_new_paths_and_refuses_what_it_cannot_read() -> None:
    """A new callable taking a reason is picked up by its signature alone; kopf's `event` is not ours."""
    assert _scan(
        """
        import kopf
        GONE = "ModelGone"

        def warn(kind: str, reason: str) -> None: ...

        @kopf.on.event("v1", "pods")
        def handler(reason: str) -> None:
            warn("Warning", "BrandNew")
            warn("Warning", GONE if reason else "Other")
            warn("Warning", reason)  # passed on
        """
    ) == {"BrandNew", "ModelGone", "Other"}
    with pytest.raises(UnresolvedReason, match=r"example\.py:4"):
        _scan(
            """
            def warn(reason: str) -> None: ...
            def handler(n: int) -> None:
                warn(f"Reason{n}")
            """
        )


def test_every_condition_type_is_documented(doc: str) -> None:
    types = [value for name, value in vars(conditions).items() if name.isupper() and isinstance(value, str)]
    assert types, "no condition types found in modelgate.core.conditions"
    missing = [t for t in types if not documented(doc, t)]
    assert not missing, f"describe these condition types in {DOC.relative_to(ROOT)}: {missing}"


def test_every_phase_is_documented(doc: str) -> None:
    missing = [phase.value for phase in Phase if f"| `{phase.value}` |" not in doc]
    assert not missing, f"add these phases to the table of phases in {DOC.relative_to(ROOT)}: {missing}"
