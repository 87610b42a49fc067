"""The operator never crashes on an object it can read: whatever a ModelRollout's spec, status or
command annotation hold, a tick reports (Failed, naming the field) rather than raises, and every
status it writes reads back. Random edits of a realistic object, through the real Reconciler with a
Kube that records instead of calling an API server."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes import client

from modelgate.api import (
    InvalidSpecError,
    ModelRolloutStatus,
    Phase,
    parse_duration,
    parse_spec,
    parse_status,
)
from modelgate.api.duration import MAX_DURATION
from modelgate.commands import COMMAND_ANNOTATION
from modelgate.kube import Kube, NotFound
from modelgate.kube.objects import DeploymentAvailability
from modelgate.reconciler import Reconciler
from tests.unit.test_api_models import contract_spec

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
STATUS: dict[str, Any] = {
    "phase": "Progressing",
    "observedGeneration": 2,
    "rolloutCandidate": "chat-v2",
    "currentStepIndex": 1,
    "currentWeight": 10,
    "liveWeight": 10,
    "stepStartedAt": "2026-05-01T11:59:00Z",
    "lastAnalysisAt": "2026-05-01T11:59:30Z",
    "analysis": [
        {
            "name": "error-rate",
            "verdict": "Pass",
            "time": "2026-05-01T11:59:30Z",
            "value": 0.001,
            "history": [{"time": "2026-05-01T11:59:30Z", "value": 0.001, "verdict": "Pass"}],
        }
    ],
    "conditions": [
        {
            "type": "RouteReady",
            "status": "True",
            "reason": "RouteFound",
            "message": "ok",
            "lastTransitionTime": "2026-05-01T11:58:00Z",
        }
    ],
}


def rollout_body() -> dict[str, Any]:
    return {
        "apiVersion": "modelgate.io/v1alpha1",
        "kind": "ModelRollout",
        "metadata": {
            "name": "chat",
            "namespace": "serving",
            "uid": "0000",
            "generation": 2,
            "annotations": {COMMAND_ANNOTATION: '{"action": "promote", "id": "c0ffee"}'},
        },
        "spec": contract_spec(),
        "status": copy.deepcopy(STATUS),
    }


class RecordingKube(Kube):
    """No route (so no weight is ever written), an Available candidate, and writes recorded."""

    def __init__(self) -> None:
        super().__init__(client.ApiClient())
        self.statuses: list[dict[str, Any]] = []
        self.events: list[tuple[str, str]] = []

    def get_custom(
        self, group: str, version: str, namespace: str, plural: str, name: str, **_: Any
    ) -> dict[str, Any]:
        raise NotFound(404, f"{plural} {namespace}/{name} not found")

    def deployment_availability(self, namespace: str, name: str) -> DeploymentAvailability:
        return DeploymentAvailability(exists=True, available=True, message="available")

    def patch_status(self, namespace: str, name: str, status_body: Any) -> dict[str, Any]:
        self.statuses.append(dict(status_body))
        return {}

    def create_event(self, involved: Any, type_: str, reason: str, message: str, *_: Any, **__: Any) -> Any:
        self.events.append((reason, message))
        return {}

    def patch_annotations(self, namespace: str, name: str, annotations: Any) -> dict[str, Any]:
        return {}


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def paths(node: Any, prefix: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    """Every key path below `node`, so that any field can be replaced or removed."""
    children: list[tuple[Any, Any]] = []
    if isinstance(node, dict):
        children = list(node.items())
    elif isinstance(node, list):
        children = list(enumerate(node))
    found = [prefix]
    for key, child in children:
        found += paths(child, (*prefix, key))
    return found


def edit(body: dict[str, Any], path: tuple[Any, ...], value: Any, remove: bool) -> None:
    *parents, last = path
    node: Any = body
    for key in parents:
        node = node[key]
    if remove and isinstance(node, dict):
        del node[last]
    else:
        node[last] = value


# The API server checks metadata itself: only the command annotation's text is the user's to garble.
BASE_PATHS = [p for part in ("spec", "status") for p in paths(rollout_body()[part], (part,)) if len(p) > 1]


@settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    edits=st.lists(st.tuples(st.sampled_from(BASE_PATHS), JSON, st.booleans()), min_size=1, max_size=3),
    command=st.none() | st.text(max_size=40),
)
def test_a_tick_reports_what_it_cannot_read_and_never_raises(
    edits: list[tuple[tuple[Any, ...], Any, bool]], command: str | None
) -> None:
    body = rollout_body()
    if command is not None:
        body["metadata"]["annotations"][COMMAND_ANNOTATION] = command
    for path, value, remove in edits:
        try:
            edit(body, path, value, remove)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed or replaced this path's parent
    kube = RecordingKube()
    Reconciler(kube, clock=lambda: NOW).tick(body)

    for written in kube.statuses:
        parse_status(written)
    unreadable = []
    for part, parse in (("status", parse_status), ("spec", parse_spec)):  # the order a tick reads them
        try:
            parse(body.get(part) or {})
        except InvalidSpecError as error:
            unreadable.append(error.problems[0].split(":")[0])
    if unreadable:
        failed = ModelRolloutStatus.model_validate(kube.statuses[-1])
        assert failed.phase is Phase.FAILED
        assert failed.message is not None and unreadable[0] in failed.message
        assert any(reason == "InvalidSpec" for reason, _ in kube.events)


# The first only from an older CRD (today's refuses it); the second passes today's schema.
@pytest.mark.parametrize(
    "step_started_at",
    [
        "2026-05-01T11:59:00",
        "9999-12-31T23:00:00Z",  # plus the pause's duration, past datetime's end
    ],
)
def test_a_status_it_cannot_read_ends_failed_and_stays_so(step_started_at: str) -> None:
    body = rollout_body()
    body["status"]["stepStartedAt"] = step_started_at
    body["spec"]["steps"][1]["pause"]["duration"] = "2h"
    del body["metadata"]["annotations"]
    kube = RecordingKube()
    reconciler = Reconciler(kube, clock=lambda: NOW)
    reconciler.tick(body)
    failed = parse_status(kube.statuses[-1])
    assert (failed.phase, failed.rollout_candidate) == (Phase.FAILED, "chat-v2")
    assert failed.message is not None and "status.stepStartedAt" in failed.message

    body["status"] = kube.statuses[-1]
    reconciler.tick(body)
    assert len(kube.statuses) == 1  # held: not started over from step 0


@given(text=st.text(alphabet="0123456789.hms", max_size=32))
@settings(max_examples=300, derandomize=True, deadline=None)
def test_every_duration_that_parses_can_be_added_to_a_timestamp(text: str) -> None:
    try:
        duration = parse_duration(text)
    except ValueError:
        return
    assert duration <= MAX_DURATION
    assert NOW + duration >= NOW


@pytest.mark.parametrize("text", ["1000000000h", "876000h1ms", "52560001m"])
def test_durations_beyond_a_hundred_years_are_refused_naming_the_field(text: str) -> None:
    spec = contract_spec()
    spec["steps"][1]["pause"]["duration"] = text
    with pytest.raises(InvalidSpecError) as refused:
        parse_spec(spec)
    assert refused.value.problems[0].startswith(f'spec.steps[1].pause.duration: "{text}" must be at most')
