"""The kopf registrations: watch-event handlers only, which is what lets the operator skip kopf's
diff-base (a deep copy of every object on every event)."""

from __future__ import annotations

import kopf

from modelgate import handlers


def test_only_watch_event_handlers_are_registered_so_no_diff_base_is_needed() -> None:
    registry = kopf.get_default_registry()
    watched = {handler.id for handler in registry._watching.get_all_handlers()}
    assert {"rollout_event", "deployment_event", "route_event"} <= watched
    # A change-detecting handler or a daemon would need kopf's diff-base: NoDiffBase must go then.
    assert not registry._changing.get_all_handlers()
    assert not registry._spawning.get_all_handlers()


def test_the_diff_base_keeps_nothing_of_the_object() -> None:
    body = kopf.Body({"metadata": {"name": "chat"}, "spec": {"steps": [{"setWeight": 10}]}})
    storage = handlers.NoDiffBase()
    assert storage.build(body=body) == {}
    assert storage.fetch(body=body) is None
