"""A second writer setting the route's weights every second, under a field manager of its own: the
operator writes its weight back at most once, then holds with RouteConflict naming that writer, and
the route does not flap; once the writer stops, `modelgate resume` lets the rollout finish."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from kubernetes import client

from modelgate.api import Phase
from modelgate.core import ConditionType, Reason
from testbed.manifests import GATEWAY_GROUP, GATEWAY_VERSION
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.cli import modelgate
from tests.support.faults.common import plain_rollout_at_step, wait_phase, wait_status
from tests.support.kube import rollout_status
from tests.support.operators import operator_events

WRITER = "weight-fighter"
ITS_WEIGHT = 70  # the candidate weight the other writer keeps setting
OURS = 20


@dataclass
class OtherWriter:
    """Sets the route's weights every `period` seconds with a JSON patch under its own field manager,
    in a thread, until stopped; counts its writes."""

    api: client.CustomObjectsApi
    namespace: str
    route: str
    period: float = 1.0
    writes: int = 0
    failure: Exception | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Returns once its last write is done."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def count(self) -> int:
        """Its writes so far; raises what stopped it, if anything did."""
        if self.failure is not None:
            raise RuntimeError(f"the other writer failed: {self.failure!r}") from self.failure
        return self.writes

    def _run(self) -> None:
        patch = [
            {"op": "replace", "path": "/spec/rules/0/backendRefs/0/weight", "value": 100 - ITS_WEIGHT},
            {"op": "replace", "path": "/spec/rules/0/backendRefs/1/weight", "value": ITS_WEIGHT},
        ]
        route = (GATEWAY_GROUP, GATEWAY_VERSION, self.namespace, "httproutes", self.route)
        try:
            while not self._stop.is_set():
                self.api.patch_namespaced_custom_object(
                    *route, patch, field_manager=WRITER, _content_type="application/json-patch+json"
                )
                self.writes += 1
                self._stop.wait(self.period)  # the other writer's own rhythm
        except Exception as error:  # handed to the test thread by count()
            self.failure = error


def second_writer(
    api_client: client.ApiClient, namespace: str, operator: OperatorProcess, *, writes_while_held: int
) -> dict[str, float]:
    # The operator sees the other writer at its next resync (10 s) and again at the pause's end.
    steps = [{"setWeight": OURS}, {"pause": {"duration": "12s"}}, {"setWeight": 100}]
    writer = OtherWriter(client.CustomObjectsApi(api_client), namespace, "chat")
    with plain_rollout_at_step(api_client, namespace, steps) as recorder:
        writing_since = time.time()
        writer.start()
        try:
            held = wait_status(
                api_client,
                namespace,
                "chat",
                lambda s: writer.count() > 0 and s.phase is Phase.PAUSED,
                "held",
            )
            held_after = time.time() - writing_since
            ready = next(c for c in held.conditions if c.type == ConditionType.ROUTE_READY)
            assert (ready.status, ready.reason) == ("False", Reason.ROUTE_CONFLICT), ready
            assert WRITER in ready.message and WRITER in (held.message or "")
            reasons = [e["reason"] for e in operator_events(api_client, namespace)["chat"]]
            assert Reason.ROUTE_OVERWRITTEN in reasons and reasons.count(Reason.ROUTE_CONFLICT) == 1, reasons

            # Held: the other writer goes on and the operator writes nothing more.
            writes_at_hold = writer.count()
            wait_for(
                lambda: writer.count() >= writes_at_hold + writes_while_held,
                timeout=writes_while_held * 3 + 30,
                what=f"{writes_while_held} more writes of the other writer",
            )
            assert rollout_status(api_client, namespace, "chat").phase is Phase.PAUSED
            while_writing = recorder.candidate_weights(after=writing_since)
            # Ours once back, and the other writer's again: never a flap.
            assert while_writing == [ITS_WEIGHT, OURS, ITS_WEIGHT], while_writing
            writer.stop()

            resumed = modelgate(operator.kubeconfig, "resume", "chat", "-n", namespace)
            assert resumed.returncode == 0, resumed.stdout + resumed.stderr
            wait_phase(api_client, namespace, "chat", (Phase.SUCCEEDED,), timeout=90)
            assert recorder.candidate_weights(after=writing_since) == [
                ITS_WEIGHT,
                OURS,
                ITS_WEIGHT,
                OURS,
                100,
            ]
        finally:
            writer.stop()
    return {"writing_to_held_seconds": held_after, "other_writes": writer.writes}
