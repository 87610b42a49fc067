"""The chart's notifications: the defaults reach the operator as it reads them, and the operator may
read exactly the Secrets named for them (in the release's namespace) and for rollouts' receivers."""

from __future__ import annotations

import json

from modelgate.api.notifications import ReceiverKind, Transition
from modelgate.notifications import NotificationDefaults
from tests.unit.test_chart import CHART, COMBINATIONS, NAMESPACE, container, of_kind, render, rules

SECRET_RULE = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}


def test_the_defaults_reach_the_operator_as_it_reads_them() -> None:
    objects = render(COMBINATIONS["notifications"])
    env = {e["name"]: e for e in container(objects)["env"]}
    environ = {"MODELGATE_NOTIFICATIONS": env["MODELGATE_NOTIFICATIONS"]["value"], "MODELGATE_NAMESPACE": "x"}
    defaults = NotificationDefaults.from_environment(environ)
    assert defaults.spec is not None and defaults.spec.on == (Transition.ROLLED_BACK, Transition.FAILED)
    assert [r.kind for r in defaults.spec.receivers] == [ReceiverKind.SLACK]
    assert env["MODELGATE_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"


def test_receiver_secrets_are_granted_by_name_only() -> None:
    objects = render(COMBINATIONS["notifications"])
    (role,) = of_kind(objects, "Role")
    assert role["metadata"]["namespace"] == NAMESPACE
    assert role["rules"] == [{**SECRET_RULE, "resourceNames": ["ops-hooks"]}]
    cluster_rules = [rule for owner, rule in rules(objects) if owner["kind"] == "ClusterRole"]
    assert {**SECRET_RULE, "resourceNames": ["team-hooks"]} in cluster_rules
    assert "MODELGATE_NOTIFICATIONS" not in {e["name"] for e in container(render())["env"]}
    assert not [rule for _, rule in rules(render()) if "secrets" in rule["resources"]]


def test_the_values_schema_names_the_models_kinds_and_transitions() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    defaults = schema["properties"]["notifications"]["properties"]["defaults"]["properties"]
    assert defaults["on"]["items"]["enum"] == [t.value for t in Transition]
    kinds = defaults["receivers"]["items"]["properties"]["kind"]["enum"]
    assert kinds == [k.value for k in ReceiverKind]
