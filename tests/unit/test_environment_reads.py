"""Only the CLI reads the process's environment (issue 37): `modelgate run` builds the operator's
OperatorConfig from it, `modelgate eval` and the refusal proxy read theirs in their own entry points,
and pass down what they read. A module outside modelgate/cli/ that reads os.environ (or os.getenv)
would be a setting no flag, test or reader can see arrive."""

from __future__ import annotations

import ast
from pathlib import Path

import modelgate

PACKAGE = Path(modelgate.__file__).parent
READS = {"environ", "environb", "getenv", "getenvb"}


def environment_reads(source: str) -> list[int]:
    """The lines of `source` that touch os.environ, os.getenv and their like, or import them."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in READS
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        ):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "os":
            lines.extend(node.lineno for alias in node.names if alias.name in READS)
    return lines


def test_no_module_outside_the_cli_reads_the_environment() -> None:
    found = {
        str(path.relative_to(PACKAGE)): reads
        for path in sorted(PACKAGE.rglob("*.py"))
        if "cli" not in path.relative_to(PACKAGE).parts[:1] and (reads := environment_reads(path.read_text()))
    }
    assert found == {}


def test_every_way_of_reading_it_is_found() -> None:
    source = "import os\nfrom os import getenv\na = os.environ['X']\nb = os.getenv('Y')\nc = os.path.sep\n"
    assert sorted(environment_reads(source)) == [2, 3, 4]
