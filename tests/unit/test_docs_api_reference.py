"""docs/api-reference.md is generated from the CRD by `python -m tooling.docs_gen` (run by `make
generate`); the generator must leave out nothing of the schema. That the committed page is current
is tests/unit/test_generated_files.py."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tooling import cli_samples_doc, docs_gen

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.load((ROOT / docs_gen.CRD_FILE).read_text(), Loader=yaml.CSafeLoader)
    return loaded


@pytest.fixture(scope="module")
def reference(crd: dict[str, Any]) -> str:
    return docs_gen.render_api_reference(crd)


def sections(text: str) -> dict[str, str]:
    """Heading text of each `### ` section -> its body."""
    found = {}
    for chunk in text.split("\n### ")[1:]:
        heading, _, body = chunk.partition("\n")
        found[heading] = body.split("\n## ")[0]
    return found


def fields(node: dict[str, Any], path: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(section path, field name, schema) of every property below `node`."""
    for name, child in node.get("properties", {}).items():
        yield path, name, child
        if child.get("properties"):
            yield from fields(child, f"{path}.{name}")
        items = child.get("items", {})
        if items.get("properties"):
            yield from fields(items, f"{path}.{name}[]")


def test_rendering_is_deterministic(crd: dict[str, Any], reference: str) -> None:
    assert docs_gen.render_api_reference(copy.deepcopy(crd)) == reference


@pytest.mark.parametrize("part", ["spec", "status"])
def test_every_field_has_a_row_with_its_schema(crd: dict[str, Any], reference: str, part: str) -> None:
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"][part]
    by_heading = sections(reference)
    checked = 0
    for path, name, node in fields(schema, part):
        assert path in by_heading, f"no section for {path}"
        row = next((line for line in by_heading[path].splitlines() if line.startswith(f"| `{name}` |")), None)
        assert row is not None, f"no row for {path}.{name}"
        expected = [str(node.get("description", ""))]
        expected += [
            str(node[key]) for key in ("minimum", "maximum", "minLength", "maxLength") if key in node
        ]
        expected += [str(node[key]) for key in ("minItems", "maxItems") if key in node]
        expected += [str(value) for value in node.get("enum", [])]
        if "pattern" in node:
            expected.append(node["pattern"].replace("|", "\\|"))
        if "default" in node:
            default = node["default"]
            expected.append(default if isinstance(default, str) else json.dumps(default))
        for text in expected:
            assert text in row, f"{path}.{name}: {text!r} missing from {row!r}"
        assert ("| yes |" in row) == (name in node_required(schema, path, part)), f"{path}.{name}: required"
        checked += 1
    assert checked > 10


def node_required(schema: dict[str, Any], path: str, part: str) -> set[str]:
    node = schema
    for step in path.removeprefix(part).split(".")[1:]:
        node = node["properties"][step.removesuffix("[]")]
        if step.endswith("[]"):
            node = node["items"]
    return set(node.get("required", []))


def test_every_validation_rule_and_message_is_listed(crd: dict[str, Any], reference: str) -> None:
    rules = []

    def walk(node: dict[str, Any]) -> None:
        rules.extend(node.get("x-kubernetes-validations", []))
        for child in node.get("properties", {}).values():
            walk(child)
        if "items" in node:
            walk(node["items"])

    walk(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    assert len(rules) >= 5
    table = reference.split("## Validation rules")[1]
    for rule in rules:
        assert rule["rule"].replace("|", "\\|") in table
        message = rule.get("message") or rule.get("messageExpression")
        assert message.replace("|", "\\|") in table


def test_every_printer_column_is_listed(crd: dict[str, Any], reference: str) -> None:
    table = reference.split("## Printer columns")[1].split("\n## ")[0]
    for column in crd["spec"]["versions"][0]["additionalPrinterColumns"]:
        assert f"| {column['name']} | {column['type']} | `{column['jsonPath']}` |" in table


def test_internal_links_lead_to_headings(reference: str) -> None:
    headings = [line.lstrip("#").strip() for line in reference.splitlines() if line.startswith("#")]
    anchors = [docs_gen.anchor(h) for h in headings]
    assert len(anchors) == len(set(anchors)), "two headings share an anchor"
    for target in {part.split(")")[0] for part in reference.split("](#")[1:]}:
        assert target in anchors, f"link to #{target} leads nowhere"


def test_check_mode_reports_and_write_mode_fixes(tmp_path: Path) -> None:
    docs = (docs_gen.METRIC_PRESETS, docs_gen.PRESETS_BY_SOURCE, docs_gen.API_REFERENCE, docs_gen.README)
    docs += (docs_gen.CHART_VALUES, docs_gen.CHART_README, docs_gen.EVALUATION_API_REFERENCE)
    docs += (docs_gen.GETTING_STARTED, cli_samples_doc.EXAMPLE, docs_gen.CHART_OTHER_NAMES)
    docs += (docs_gen.ARCHITECTURE,)
    docs += tuple(path for pair in docs_gen.POLICY_REFERENCES for path in pair)
    for path in (docs_gen.CRD_FILE, docs_gen.EVALUATION_CRD_FILE, *docs):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, tmp_path / path)
    assert docs_gen.main(["--check", "--root", str(tmp_path)]) == 0
    (tmp_path / docs_gen.API_REFERENCE).write_text("stale\n")
    assert docs_gen.main(["--check", "--root", str(tmp_path)]) == 1
    assert docs_gen.main(["--root", str(tmp_path)]) == 0
    assert docs_gen.main(["--check", "--root", str(tmp_path)]) == 0
    assert (tmp_path / docs_gen.API_REFERENCE).read_text() == (ROOT / docs_gen.API_REFERENCE).read_text()
