"""The chart's default notifications: a rollout's own replace them whole, and whose Secret namespace
a receiver's URL is read in (a rollout's own: its namespace only; the defaults': the operator's)."""

from __future__ import annotations

import json

import pytest

from modelgate.notifications import NotificationDefaults
from tests.unit.engine_support import make_spec, weight
from tests.unit.test_notifying import RECEIVERS, notifying

DEFAULTS = {"receivers": [{"name": "platform", "kind": "slack", "urlSecretRef": {"name": "p", "key": "k"}}]}
ENVIRON = {"MODELGATE_NOTIFICATIONS": json.dumps(DEFAULTS), "MODELGATE_NAMESPACE": "modelgate-system"}


def body(spec_notifications: object = None) -> dict[str, object]:
    spec = {} if spec_notifications is None else {"notifications": spec_notifications}
    return {"metadata": {"namespace": "team-a", "name": "chat"}, "spec": spec}


def test_a_rollout_without_notifications_gets_the_defaults_read_in_the_operators_namespace() -> None:
    defaults = NotificationDefaults.from_environment(ENVIRON)
    spec = defaults.applied(make_spec(weight(20)))
    (target,) = defaults.targets(body(), spec)
    assert (target.receiver.name, target.secret_namespace) == ("platform", "modelgate-system")


def test_a_rollouts_own_replace_the_defaults_and_are_read_in_its_namespace() -> None:
    defaults = NotificationDefaults.from_environment(ENVIRON)
    own = defaults.applied(notifying(make_spec(weight(20))))
    (target,) = defaults.targets(body({"receivers": RECEIVERS}), own)
    assert (target.receiver.name, target.secret_namespace) == ("ops", "team-a")
    silenced = defaults.applied(notifying(make_spec(weight(20)), receivers=[]))
    assert defaults.targets(body({"receivers": []}), silenced) == ()


@pytest.mark.parametrize(
    "environ",
    [
        {"MODELGATE_NOTIFICATIONS": "{not json"},
        {"MODELGATE_NOTIFICATIONS": json.dumps({"receivers": [{"name": "x", "kind": "pager"}]})},
        {"MODELGATE_NOTIFICATIONS": json.dumps(DEFAULTS)},  # no namespace for its Secret
    ],
)
def test_bad_defaults_stop_the_operator_naming_the_setting(environ: dict[str, str]) -> None:
    with pytest.raises(ValueError, match="MODELGATE_NOTIFICATIONS"):
        NotificationDefaults.from_environment(environ)
