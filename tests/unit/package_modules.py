"""The package's modules read from their source: names, files and module-level imports, for the
tests of the package's shape (names, cycles, sizes, documentation)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2] / "operator" / "modelgate"
PACKAGE = "modelgate"


@dataclass(frozen=True)
class Module:
    name: str  # dotted, e.g. modelgate.core.engine
    path: Path

    @property
    def relative(self) -> str:
        """Its path relative to the package, e.g. core/engine.py."""
        return self.path.relative_to(PACKAGE_ROOT).as_posix()

    @property
    def is_package(self) -> bool:
        return self.path.name == "__init__.py"

    def tree(self) -> ast.Module:
        return ast.parse(self.path.read_text(), filename=str(self.path))


def modules() -> list[Module]:
    found = []
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        parts = path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts
        dotted = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found.append(Module(dotted, path))
    return found


def module_level_imports(module: Module, known: set[str], typing_too: bool = False) -> set[str]:
    """The package's modules this one imports when it is imported: statements outside functions
    and, unless `typing_too`, outside `if TYPE_CHECKING:` blocks. `from a import b` names a.b when
    that is a module."""
    imported: set[str] = set()
    for node in _executed_at_import(module.tree().body, typing_too):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, node)
            for alias in node.names:
                imported.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
    return {name for name in imported if name in known and name != module.name}


def _executed_at_import(body: list[ast.stmt], typing_too: bool) -> Iterator[ast.stmt]:
    for node in body:
        if isinstance(node, ast.If) and _is_type_checking(node.test) and not typing_too:
            yield from _executed_at_import(node.orelse, typing_too)
        elif isinstance(node, ast.If | ast.With):
            yield from _executed_at_import(node.body, typing_too)
            yield from _executed_at_import(getattr(node, "orelse", []), typing_too)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _executed_at_import(block, typing_too)
        else:
            yield node


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module.name.split(".")
    anchor = package if module.is_package else package[:-1]
    anchor = anchor[: len(anchor) - (node.level - 1)]
    return ".".join([*anchor, node.module] if node.module else anchor)
