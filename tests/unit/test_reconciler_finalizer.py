"""The finalizer of onDelete ReturnTraffic, against the in-memory API: added before any weight is
written (or nothing is written), and on deletion removed only after the route gives the candidate 0."""

from __future__ import annotations

from typing import Any

from modelgate.core.actions import FINALIZER
from tests.unit.test_reconciler_write_order import InMemoryKube, at_the_end_of_the_pause, tick


class FinalizingKube(InMemoryKube):
    def __init__(self, kube: InMemoryKube, *, patch_takes: bool = True) -> None:
        super().__init__(kube.rollout, kube.route)
        self.rollout["spec"]["rollback"] = {"onDelete": "ReturnTraffic"}
        self.patch_takes = patch_takes

    def set_finalizer(self, namespace: str, name: str, finalizer: str, present: bool) -> bool:
        if self.patch_takes:
            others = [f for f in self.rollout["metadata"].get("finalizers", []) if f != finalizer]
            self.rollout["metadata"]["finalizers"] = [*others, finalizer] if present else others
            self.writes.append(("finalizer", int(present)))
        return self.patch_takes


def deleting(kube: FinalizingKube) -> FinalizingKube:
    kube.rollout["metadata"].update(deletionTimestamp="2026-01-01T12:00:00Z", finalizers=[FINALIZER])
    return kube


def test_the_finalizer_is_there_before_any_weight() -> None:
    kube = FinalizingKube(at_the_end_of_the_pause())
    tick(kube)
    assert kube.writes[:3] == [("finalizer", 1), ("status", 50), ("route", 50)]


def test_nothing_is_written_while_the_finalizer_cannot_be_added() -> None:
    kube = FinalizingKube(at_the_end_of_the_pause(), patch_takes=False)
    tick(kube)
    assert kube.writes == []


def test_a_deletion_returns_the_traffic_then_removes_the_finalizer() -> None:
    kube = deleting(FinalizingKube(at_the_end_of_the_pause()))
    tick(kube)
    assert kube.writes == [("route", 0), ("finalizer", 0)]
    assert kube.rollout["metadata"]["finalizers"] == []


def test_a_deletion_whose_weight_does_not_take_keeps_the_finalizer() -> None:
    class RewritingKube(FinalizingKube):
        def json_patch_custom(self, *args: Any, **kwargs: Any) -> Any:
            stored = super().json_patch_custom(*args, **kwargs)
            stored["spec"]["rules"][0]["backendRefs"][1]["weight"] = 20  # a webhook puts it back
            return stored

    kube = deleting(RewritingKube(at_the_end_of_the_pause()))
    tick(kube)
    assert ("finalizer", 0) not in kube.writes
    assert kube.rollout["metadata"]["finalizers"] == [FINALIZER]
