"""Values named as Argo Rollouts' and Flagger's charts name them (files/other-charts-values.yaml)
are refused with a sentence naming modelgate's value, not with the schema's "additional properties
not allowed"; the schema still refuses a name that is no one's, and admits Helm's `global` (an
umbrella chart's values for its subcharts)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.unit.test_chart import CHART, MIN_KUBE_VERSION, Object, helm, render_error
from tests.unit.test_docs_links import has_path

OTHER_NAMES: list[dict[str, str]] = yaml.safe_load((CHART / "files" / "other-charts-values.yaml").read_text())
DEFAULTS: Object = yaml.safe_load((CHART / "values.yaml").read_text())
SCHEMA_REFUSAL = "values don't meet the specifications of the schema"


def values_at(path: str, value: Any) -> Object:
    """{"a": {"b": value}} for path "a.b"."""
    for key in reversed(path.split(".")):
        value = {key: value}
    return dict(value)


def refusal_lines(values: Object) -> list[str]:
    """The lines of a refusal that name another chart's value."""
    error = render_error(values)
    assert SCHEMA_REFUSAL not in error
    return [line for line in error.splitlines() if " name; " in line]


@pytest.mark.parametrize("entry", OTHER_NAMES, ids=lambda entry: entry["name"])
def test_another_charts_name_is_refused_naming_modelgates(entry: dict[str, str]) -> None:
    (line,) = refusal_lines(values_at(entry["name"], {"typed": "as in the other chart"}))
    name, _, rest = line.partition(" is ")
    assert name.endswith(entry["name"]) and entry["of"] in rest
    if "ours" in entry:
        assert has_path(DEFAULTS, entry["ours"]), f"{entry['ours']}: no such value"
        assert f"modelgate's is {entry['ours']}" in rest
    else:
        assert entry["instead"] in rest


def test_a_value_set_to_false_is_named_too() -> None:
    # `--set leaderElection.enabled=false` is typed as surely as true.
    (line,) = refusal_lines({"leaderElection": {"enabled": False}})
    assert "peering.enabled" in line


def test_every_name_is_named_at_once_and_a_longer_one_stands_for_its_parent() -> None:
    values = {
        "controller": {"replicas": 2, "somethingElse": 1},
        "leaderElection": {"enabled": True},
        "installCRDs": True,
    }
    lines = refusal_lines(values)
    named = [line.split(" is ")[0].split()[-1] for line in lines]
    assert sorted(named) == ["controller.replicas", "installCRDs", "leaderElection.enabled"]


def test_other_names_and_defaults_are_all_the_schema_admits_at_the_top() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    heads = {entry["name"].split(".")[0] for entry in OTHER_NAMES}
    # `global`: Helm's own, in every subchart's values.
    assert set(schema["properties"]) == set(DEFAULTS) | heads | {"global"}
    assert schema["additionalProperties"] is False


def test_a_name_that_is_no_ones_is_still_the_schemas_to_refuse() -> None:
    error = render_error({"controller": {"replicas": 2}, "leaderElect": True})
    assert SCHEMA_REFUSAL in error and "'leaderElect'" in error


def test_the_chart_renders_as_a_subchart_of_an_umbrella_chart_with_globals(tmp_path: Path) -> None:
    umbrella = tmp_path / "umbrella"
    shutil.copytree(CHART, umbrella / "charts" / "modelgate")
    dependency = {"name": "modelgate", "version": ">=0.0.0"}
    chart = {"apiVersion": "v2", "name": "umbrella", "version": "1.0.0", "dependencies": [dependency]}
    (umbrella / "Chart.yaml").write_text(yaml.safe_dump(chart))
    values = {"global": {"imageRegistry": "registry.example"}, "modelgate": {"image": {"repository": "mg"}}}
    (umbrella / "values.yaml").write_text(yaml.safe_dump(values))
    result = helm("template", "u", str(umbrella), f"--kube-version={MIN_KUBE_VERSION}")
    assert result.returncode == 0, result.stderr
    kinds = [doc["kind"] for doc in yaml.safe_load_all(result.stdout) if doc]
    assert "Deployment" in kinds
