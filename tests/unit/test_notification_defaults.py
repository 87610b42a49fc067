"""The chart's default notifications: a rollout's own replace them whole, and whose Secret namespace
a receiver's URL is read in (a rollout's own: its namespace only; the defaults': the operator's), and
a tenant's Events never name the platform's Secrets."""

from __future__ import annotations

import json
from typing import Any

import pytest

from modelgate.core.model import Notify
from modelgate.notifications import NotificationDefaults
from testbed.waiting import wait_for
from tests.unit.engine_support import make_spec, weight
from tests.unit.test_notification_delivery import FAST, INVOLVED, FakeKube, notifier_for, rollback
from tests.unit.test_notifying import RECEIVERS, notifying

DEFAULTS = {"receivers": [{"name": "platform", "kind": "slack", "urlSecretRef": {"name": "p", "key": "k"}}]}
ENVIRON = {"MODELGATE_NOTIFICATIONS": json.dumps(DEFAULTS), "MODELGATE_NAMESPACE": "modelgate-system"}
__all__ = ["notifier_for", "rollback"]  # fixtures


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


def test_a_policys_receivers_are_read_in_the_rollouts_namespace() -> None:
    """Receivers the rollout takes from its policy (resolved into its spec) are the rollout's, not
    the platform's defaults: their Secrets are read in its namespace."""
    defaults = NotificationDefaults.from_environment(ENVIRON)
    from_policy = defaults.applied(notifying(make_spec(weight(20))))
    (target,) = defaults.targets(body(), from_policy)  # the object itself has no notifications
    assert (target.receiver.name, target.secret_namespace) == ("ops", "team-a")


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


def test_a_default_receivers_failure_is_told_to_the_tenant_without_the_platforms_secret(
    rollback: Notify, notifier_for: Any
) -> None:
    platform = {"name": "platform", "kind": "slack", "urlSecretRef": {"name": "platform-hooks", "key": "k"}}
    environ = {**ENVIRON, "MODELGATE_NOTIFICATIONS": json.dumps({"receivers": [platform]})}
    defaults = NotificationDefaults.from_environment(environ)
    targets = defaults.targets(body(), defaults.applied(make_spec(weight(20))))
    kube = FakeKube({})  # the Secret has no such key
    notifier = notifier_for(kube)

    notifier.submit(rollback, targets, INVOLVED)
    wait_for(lambda: notifier.finished([rollback.key]) or None, timeout=5, what="the delivery to end")

    ((kind, reason, message),) = kube.events
    assert (kind, reason) == ("Warning", "NotificationFailed")
    assert "the platform's default receiver platform" in message and f"{FAST.attempts} attempt" in message
    assert "platform-hooks" not in message and "modelgate-system" not in message
