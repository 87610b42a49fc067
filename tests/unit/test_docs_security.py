"""docs/security.md's RBAC tables name exactly the rights the chart renders, scope by scope: a rule
added to the chart without a line of the threat model (or a line left after its rule went) fails."""

from __future__ import annotations

import re

import pytest

from testbed.versions import REPO_ROOT
from tests.unit.test_chart import Object, render, rules

DOC = REPO_ROOT / "docs" / "security.md"
Right = tuple[str, str, str]  # API group, resource, verb

# Every option that adds a right, in each scope.
EVERY_RIGHT: dict[str, Object] = {
    "cluster": {
        "rbac": {
            "scope": "cluster",
            "prometheusSecrets": ["prom-token"],
            "scaleDownIncumbents": True,
            "gateJobNamespaces": ["team-a"],
        },
        "replicas": 2,
        "peering": {"enabled": True},
        "oneEdit": {"enabled": True},
    },
    "namespaces": {
        "rbac": {"scope": "namespaces", "prometheusSecrets": ["prom-token"], "scaleDownIncumbents": True},
        "watchNamespaces": ["team-a"],
        "replicas": 2,
        "peering": {"enabled": True},
        "oneEdit": {"enabled": True},
    },
}


def rendered_rights(values: Object) -> set[Right]:
    return {
        (group, resource, verb)
        for _, rule in rules(render(values))
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def documented_rights(doc: str, scope: str) -> set[Right]:
    """The rows of the table under `### RBAC in <scope> scope`: group | resources | verbs | why."""
    section = doc.split(f"### RBAC in `{scope}` scope", 1)[1].split("\n#", 1)[0]
    rights: set[Right] = set()
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not line.startswith("|") or cells[0] in ("API group", "---"):
            continue
        group = cells[0].strip('"')
        resources = re.findall(r"[a-z/]+", cells[1])
        verbs = re.findall(r"[a-z]+", cells[2])
        rights |= {(group, resource, verb) for resource in resources for verb in verbs}
    return rights


@pytest.mark.parametrize("scope", sorted(EVERY_RIGHT))
def test_the_security_doc_lists_every_right_of_each_scope(scope: str) -> None:
    documented = documented_rights(DOC.read_text(), scope)
    rendered = rendered_rights(EVERY_RIGHT[scope])
    assert rendered - documented == set(), "rendered by the chart, missing from docs/security.md"
    assert documented - rendered == set(), "in docs/security.md, not rendered by the chart"


def test_the_chart_readme_points_to_the_rbac_tables() -> None:
    readme = (REPO_ROOT / "charts" / "modelgate" / "README.md").read_text()
    assert "docs/security.md" in readme
    assert not any(line.startswith("| API group") for line in readme.splitlines())
