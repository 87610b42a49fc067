"""The order of a tick's writes, against an in-memory API: a step's new weight is written after the
status that names the step (an operator killed in between writes that weight again on restart, never
the previous step's), and a rollback's 0 before anything else; and what a holding rollout waits for
is logged."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any, cast

from structlog.testing import capture_logs

from modelgate import PLURAL
from modelgate.api import ModelRolloutStatus
from modelgate.commands import COMMAND_ANNOTATION
from modelgate.core.results import AnalysisRun, MetricQuery, QueryResult
from modelgate.kube import Kube
from modelgate.kube.objects import DeploymentAvailability
from modelgate.reconciler import Reconciler
from testbed.manifests import SEED_METRICS, http_route, model_rollout
from testbed.traffic_driver import parse_backend_weights

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
STEPS = [{"setWeight": 20}, {"pause": {"duration": "10s"}}, {"setWeight": 50}]


class InMemoryKube:
    """The calls a tick makes, kept in order: ("status", currentWeight) and ("route", candidate weight)."""

    server_url = "https://127.0.0.1:6443"  # no request goes there

    def __init__(self, rollout: dict[str, Any], route: dict[str, Any]) -> None:
        self.rollout = rollout
        self.route = route
        self.candidate_available = True
        self.writes: list[tuple[str, int]] = []
        self.caches: dict[str, Any] = {}

    def get_custom(self, group: str, version: str, namespace: str, plural: str, name: str, **_: Any) -> Any:
        return copy.deepcopy(self.rollout if plural == PLURAL else self.route)

    def side_availability(self, namespace: str, side: Any, field: str) -> DeploymentAvailability:
        replicas = int(self.candidate_available)
        return DeploymentAvailability(
            exists=True, available=self.candidate_available, message=f"{replicas} of 1 replicas available"
        )

    def json_patch_custom(self, *args: Any, **_: Any) -> Any:
        operations: list[dict[str, Any]] = args[5]  # group, version, namespace, plural, name, operations
        refs = self.route["spec"]["rules"][0]["backendRefs"]
        for op in operations:
            path = op["path"].split("/")
            if op["op"] == "add" and path[1] == "spec":  # /spec/rules/0/backendRefs/<index>/weight
                refs[int(path[5])]["weight"] = op["value"]
            elif op["op"] == "add":  # the rule's claim: /metadata/annotations[/<key>]
                annotations = self.route["metadata"].setdefault("annotations", {})
                if len(path) > 3:
                    annotations[path[3].replace("~1", "/").replace("~0", "~")] = op["value"]
        self.route["metadata"]["resourceVersion"] = str(int(self.route["metadata"]["resourceVersion"]) + 1)
        self.writes.append(("route", parse_backend_weights(self.route)["chat-v2"]))
        return copy.deepcopy(self.route)

    def patch_status(self, namespace: str, name: str, status: dict[str, Any]) -> Any:
        self.rollout["status"] = {**self.rollout.get("status", {}), **status}
        self.writes.append(("status", int(status.get("currentWeight", -1))))
        return self.rollout

    def create_event(self, *_: Any, **__: Any) -> Any:
        return {}

    def patch_annotations(self, namespace: str, name: str, annotations: dict[str, str | None]) -> Any:
        return self.rollout


def at_the_end_of_the_pause(annotations: dict[str, str] | None = None) -> InMemoryKube:
    rollout = model_rollout("chat", "serving", steps=STEPS)
    started = NOW - timedelta(seconds=11)
    status = ModelRolloutStatus.model_validate(
        {
            "phase": "Progressing",
            "observedGeneration": 1,
            "rolloutCandidate": "chat-v2",
            "currentStepIndex": 1,
            "currentWeight": 20,
            "liveWeight": 20,
            "stepStartedAt": started.isoformat(),
        }
    )
    rollout["metadata"].update(generation=1, resourceVersion="7", annotations=annotations or {})
    rollout["status"] = status.to_patch()
    route = http_route("chat", "serving", {"chat-v1": 80, "chat-v2": 20})
    route["metadata"]["resourceVersion"] = "3"
    return InMemoryKube(rollout, route)


def tick(kube: InMemoryKube) -> None:
    Reconciler(cast(Kube, kube), clock=lambda: NOW).tick(copy.deepcopy(kube.rollout))


def test_a_new_steps_weight_is_written_after_the_status_naming_the_step() -> None:
    kube = at_the_end_of_the_pause()
    tick(kube)
    assert kube.writes[:2] == [("status", 50), ("route", 50)]


def test_a_rollbacks_zero_is_written_first() -> None:
    abort = '{"action": "abort", "id": "a1"}'
    kube = at_the_end_of_the_pause({COMMAND_ANNOTATION: abort})
    tick(kube)
    assert kube.writes[0] == ("route", 0)


def test_a_rollout_that_starts_holding_says_why_in_the_log_as_well_as_in_its_status() -> None:
    kube = at_the_end_of_the_pause()
    kube.candidate_available = False
    with capture_logs() as logs:
        tick(kube)
    holding = [entry for entry in logs if entry.get("message") == kube.rollout["status"]["message"]]
    assert holding, logs
    assert "0 of 1 replicas available" in holding[0]["message"]
    assert kube.rollout["status"]["phase"] == "Progressing"  # no phase change to log it


class BreachingProvider:
    """Prometheus as it stands after the breach: half the candidate's requests fail."""

    def for_analysis(self, analysis: Any) -> BreachingProvider:
        return self

    def plan(self, spec: Any, namespace: str) -> object:
        return SimpleNamespace(unbuildable={})  # every query built

    def run(self, plan: object, at: datetime) -> AnalysisRun:
        measured = {
            m["name"]: MetricQuery("q", QueryResult(0.5 if m["name"] == "error-rate" else 0.0))
            for m in SEED_METRICS
        }
        return AnalysisRun(at, QueryResult(100.0), measured)


def test_an_operator_killed_between_a_rollbacks_weight_and_its_status_does_not_give_the_traffic_back() -> (
    None
):
    """The rollback wrote 0 and the operator died before the status said RolledBack: the route is at 0,
    the status still at the step's 20 with its analysis due. The restarted operator judges first and
    rolls back; it never writes 20 again. (The same state follows a kill between a retried step's
    status and its weight: judged on what the metric's window holds, the candidate is rolled back
    without the weight ever rising, which the steps allow.)"""
    rollout = model_rollout(
        "chat", "serving", steps=STEPS, prometheus="http://127.0.0.1:1", metrics=SEED_METRICS
    )
    status = ModelRolloutStatus.model_validate(
        {
            "phase": "Progressing",
            "observedGeneration": 1,
            "rolloutCandidate": "chat-v2",
            "currentStepIndex": 0,
            "currentWeight": 20,
            "liveWeight": 20,
            "stepStartedAt": (NOW - timedelta(seconds=30)).isoformat(),
        }
    )
    rollout["metadata"].update(generation=1, resourceVersion="7")
    rollout["status"] = status.to_patch()
    route = http_route("chat", "serving", {"chat-v1": 100, "chat-v2": 0})
    route["metadata"]["resourceVersion"] = "3"
    kube = InMemoryKube(rollout, route)
    reconciler = Reconciler(cast(Kube, kube), clock=lambda: NOW)
    reconciler.providers = BreachingProvider()  # type: ignore[assignment]
    reconciler.tick(copy.deepcopy(kube.rollout))
    assert ("route", 20) not in kube.writes
    assert kube.rollout["status"]["phase"] == "RolledBack"
    assert parse_backend_weights(kube.route, 0) == {"chat-v1": 100, "chat-v2": 0}
