"""Many SIGKILLs of the operator at random (seeded) moments across waves of running rollouts, a
breaching one among them: nothing lost or stuck, no weight moved except as the steps say or to 0,
every pause ended within one analysis interval of its end (or of the restart after it)."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import Phase
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, http_route, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.faults.common import (
    FINISHED,
    TIMED_WEIGHTS,
    plain_rollout,
    send_command,
    timed_steps,
    wait_phase,
    wait_status,
)
from tests.support.kube import create, rollout_status
from tests.support.scenario import RouteRecorder, Scenario, StepRecorder, serving

PAUSE_STEPS = {1: 50, 3: 100}  # timed_steps' pauses: index -> the weight the step after it writes
BREACH_WEIGHT = 20


@dataclass(frozen=True)
class KillPlan:
    kills: int  # SIGKILLs of the operator in all
    seed: int
    healthy: int  # rollouts per wave that should succeed: timed steps, no analysis
    pause_seconds: float  # each of their two timed pauses
    max_gap: float  # seconds between a restart and the next kill, drawn uniformly from [0, max_gap]
    interval_seconds: float = 1  # the breaching rollout's analysis interval: the tolerance for a pause


@dataclass
class Uptime:
    """When the operator was up: the start of each run (its health check passing), and its end (a
    kill) if it ended."""

    runs: list[tuple[float, float | None]] = field(default_factory=list)

    def accountable_from(self, due: float, ended: float) -> float:
        """From when the operator answers for a pause due at `due` that ended at `ended`: its end, or
        the return (health check passing) that followed the last kill before `ended`, whichever is
        later. A restarted operator acts on its way up (its startup listing), often before the test
        sees its health check pass: that too counts from its return, not from the killed run."""
        kills = [killed for _, killed in self.runs if killed is not None and killed < ended]
        if not kills:
            return due
        back = min(started for started, _ in self.runs if started > max(kills))
        return max(due, back)


@dataclass(frozen=True)
class PauseEnd:
    wave: int
    rollout: str
    pause_index: int
    due: float  # time.time() of its end: stepStartedAt + the pause's duration
    ended: float  # when the route showed the next step's weight
    lateness: float  # how long after its end (or after the restart that came after it) it ended


@dataclass
class KillReport:
    kills: int = 0
    waves: int = 0
    seconds: float = 0.0
    restart_seconds: list[float] = field(default_factory=list)
    pause_ends: list[PauseEnd] = field(default_factory=list)
    uptime: Uptime = field(default_factory=lambda: Uptime([(time.time(), None)]))

    def as_dict(self) -> dict[str, Any]:
        latest = max(self.pause_ends, key=lambda p: p.lateness, default=None)
        return {
            "kills": self.kills,
            "waves": self.waves,
            "seconds": round(self.seconds, 1),
            "restart_seconds_max": round(max(self.restart_seconds, default=0), 2),
            "pause_lateness_max": 0 if latest is None else round(latest.lateness, 2),
            "pause_latest": None
            if latest is None
            else f"wave {latest.wave}, {latest.rollout}, pause {latest.pause_index}",
            "pause_ends": len(self.pause_ends),
        }


def operator_kills(
    bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    plan: KillPlan,
) -> KillReport:
    """Waves of rollouts (`plan.healthy` with timed steps, and one whose candidate breaches) while
    the operator is SIGKILLed at random moments, until `plan.kills` kills landed among running
    rollouts. After each wave: nothing lost or stuck, no weight moved except as the steps say or to 0,
    and every pause ended within one interval of its end (or of the restart that followed it)."""
    rng = random.Random(plan.seed)
    report = KillReport()
    objects = client.CustomObjectsApi(api_client)
    started = time.monotonic()
    breaching = model_rollout(
        "breaching",
        namespace,
        steps=[{"setWeight": BREACH_WEIGHT}, {"pause": {}}],
        prometheus=bed.prometheus_url,
        metrics=SEED_METRICS,
        interval=f"{plan.interval_seconds:g}s",
    )
    steps = StepRecorder(objects, namespace)
    steps.start()
    try:
        with serving(bed, api_client, namespace, Behaviour(error_rate=0.08)) as scenario:
            while report.kills < plan.kills:
                wave = _KillWave(api_client, namespace, scenario, report.waves, plan)
                wave.begin(breaching if report.waves == 0 else None)
                while report.kills < plan.kills and wave.running():
                    time.sleep(rng.uniform(0, plan.max_gap))  # the fault's timing, drawn from the seed
                    if not wave.running():
                        break
                    _kill_and_restart(operator, report)
                wave.end_and_check(steps, report, plan)
                report.waves += 1
    finally:
        steps.stop()
        if operator.process is None:
            operator.start()
    report.seconds = time.monotonic() - started
    return report


def _kill_and_restart(operator: OperatorProcess, report: KillReport) -> None:
    uptime = report.uptime
    killed_at = time.time()
    operator.kill()
    uptime.runs[-1] = (uptime.runs[-1][0], killed_at)
    operator.start()
    up_at = time.time()
    uptime.runs.append((up_at, None))
    report.kills += 1
    report.restart_seconds.append(up_at - killed_at)


@dataclass
class _KillWave:
    api_client: client.ApiClient
    namespace: str
    scenario: Scenario
    index: int
    plan: KillPlan
    routes: dict[str, RouteRecorder] = field(default_factory=dict)
    begun_at: float = 0.0

    @property
    def names(self) -> list[str]:
        return [f"w{self.index}-{i}" for i in range(self.plan.healthy)]

    def begin(self, breaching: dict[str, Any] | None) -> None:
        """Starts the healthy rollouts, each on a route of its own, and the breaching one: created in
        the first wave, retried in the next ones."""
        self.begun_at = time.time()
        objects = client.CustomObjectsApi(self.api_client)
        for name in self.names:
            create(self.api_client, http_route(name, self.namespace, {"chat-v1": 100, "chat-v2": 0}))
            recorder = self.routes[name] = RouteRecorder(objects, self.namespace, name)
            recorder.start()
            steps = timed_steps(self.plan.pause_seconds)
            create(self.api_client, plain_rollout(name, self.namespace, name, steps))
        if breaching is not None:
            create(self.api_client, breaching)
        else:
            retry = f"wave-{self.index}"
            send_command(self.api_client, self.namespace, "breaching", "retry", retry)
            wait_status(
                self.api_client,
                self.namespace,
                "breaching",
                lambda s: s.last_command is not None and s.last_command.id == retry,
                "retried",
            )

    def running(self) -> bool:
        return any(
            rollout_status(self.api_client, self.namespace, name).phase not in FINISHED
            for name in [*self.names, "breaching"]
        )

    def end_and_check(self, steps: StepRecorder, report: KillReport, plan: KillPlan) -> None:
        timeout = 4 * plan.pause_seconds + 60
        for name in self.names:
            final = wait_phase(self.api_client, self.namespace, name, FINISHED, timeout)
            assert final.phase is Phase.SUCCEEDED, (name, final.message)
            route = self.routes.pop(name)
            assert route.candidate_weights() == TIMED_WEIGHTS, (name, route.recorded())
            for pause_index, next_weight in PAUSE_STEPS.items():
                began = steps.step_started_at(name, pause_index)
                assert began is not None, f"{name} never showed step {pause_index} in its status"
                due = began.timestamp() + plan.pause_seconds
                ended = route.first_time_at(next_weight, after=began.timestamp())
                assert ended is not None and ended >= due, (name, pause_index, ended, due)
                lateness = ended - report.uptime.accountable_from(due, ended)
                report.pause_ends.append(PauseEnd(self.index, name, pause_index, due, ended, lateness))
                assert lateness <= plan.interval_seconds, (
                    f"{name}: pause {pause_index} ended {lateness:.2f}s late"
                )
            route.stop()
            client.CustomObjectsApi(self.api_client).delete_namespaced_custom_object(
                API_GROUP, API_VERSION, self.namespace, PLURAL, name
            )
        rolled_back = wait_phase(self.api_client, self.namespace, "breaching", FINISHED, timeout)
        assert rolled_back.phase is Phase.ROLLED_BACK, rolled_back.message
        assert rolled_back.rollback_reason is not None and rolled_back.rollback_reason.metric == "error-rate"
        wait_for(
            lambda: self.scenario.recorder.candidate_weights()[-1] == 0, timeout=10, what="the route at 0"
        )
        # Killed between its retried step's status and weight, the operator judges the step before it
        # writes the weight, on what the metric's window still holds: then it rolls back with the
        # route never raised, which the steps allow (a weight moves only as they say, or to 0).
        assert self.scenario.recorder.candidate_weights(after=self.begun_at) in ([BREACH_WEIGHT, 0], [])
