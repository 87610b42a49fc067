"""Notifications on the bed: a rollback, a success and a gate rejection each reach the webhook receiver
once with the documented payload (api/notification_payload.py), a Slack receiver that answers 500
three times gets each after its retries, an MS Teams receiver's 202 is taken, and a receiver that
never answers delays no rollback. The receivers listen on 127.0.0.1 (the session's operator allows
loopback, as a local bed does); their URLs are in a Secret of the rollout's namespace."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from kubernetes import client

from modelgate.api import Phase
from modelgate.api.gate_status import GateDecision
from modelgate.api.notification_payload import NotificationPayload
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.notification_receiver import NotificationReceiver
from testbed.operator_process import OperatorProcess
from testbed.silent_server import SilentServer
from testbed.waiting import wait_for
from tests.support.gate import (
    POLICY,
    check_pods,
    ended,
    gate_result,
    gated_rollout,
    scenario,
    score,
    script_check,
)
from tests.support.notifications import notifying
from tests.support.scenario import Rollouts, Scenario, serving

__all__ = ["check_pods", "scenario"]  # the fixtures

# The Slack receiver's 500s before its 200: one retry here, after the operator's first backoff of 1 s
# (three took 7 s of each test); tests/unit/test_notification_delivery.py retries many times over.
RETRIED = 1


@dataclass(frozen=True)
class Receivers:
    webhook: NotificationReceiver
    slack: NotificationReceiver  # 500 three times per key, then 200
    silent: SilentServer  # accepts and never answers
    teams: NotificationReceiver  # answers 202

    def by_name(self) -> dict[str, tuple[str, str]]:
        return {
            "webhook": ("webhook", self.webhook.url),
            "slack": ("slack", self.slack.url),
            "silent": ("webhook", f"{self.silent.address}/hook/secret-token"),
            "teams": ("msteams", self.teams.url),
        }


@pytest.fixture
def receivers() -> Iterator[Receivers]:
    with (
        NotificationReceiver.in_thread() as webhook,
        NotificationReceiver.in_thread(fail_first=RETRIED) as slack,
        SilentServer.in_thread() as silent,
        NotificationReceiver.in_thread(status=202) as teams,
    ):
        yield Receivers(webhook, slack, silent, teams)


def delivered(rollouts: Rollouts, receivers: Receivers, transition: str) -> NotificationPayload:
    """The payload of `transition` once the webhook and, after its retries, the Slack and Teams
    receivers took it; each took it once."""
    uid = rollouts.rollout()["metadata"]["uid"]

    def taken() -> NotificationPayload | None:
        bodies = [NotificationPayload.model_validate(r.body) for r in receivers.webhook.taken().values()]
        body = next((b for b in bodies if b.transition.value == transition), None)
        everywhere = body is not None and all(
            body.key in r.taken() for r in (receivers.slack, receivers.teams)
        )
        return body if everywhere else None

    body = wait_for(taken, timeout=40, what=f"{transition} at every answering receiver")
    assert body.key.startswith(f"{uid}/{transition}/")
    assert receivers.webhook.requests_per_key()[body.key] == 1
    assert receivers.slack.requests_per_key()[body.key] == RETRIED + 1
    assert receivers.teams.requests_per_key()[body.key] == 1
    slack = receivers.slack.taken()[body.key].body
    assert transition in slack["text"] and slack["blocks"]
    assert receivers.teams.taken()[body.key].body["@type"] == "MessageCard"
    return body


def test_a_rollback_is_told_with_its_breach_and_a_silent_receiver_delays_nothing(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    receivers: Receivers,
    record_property: Callable[[str, object], None],
) -> None:
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 20}, {"pause": {}}],
        prometheus=local_bed.prometheus_url,
        metrics=SEED_METRICS,
        interval="1s",
    )
    with serving(local_bed, api_client, namespace, Behaviour(error_rate=0.08)) as scenario:
        scenario.apply(notifying(api_client, manifest, receivers.by_name()))
        final = scenario.wait_for_status("a rollback", lambda s: s.phase is Phase.ROLLED_BACK)
        reason = final.rollback_reason
        assert reason is not None and reason.metric == "error-rate"
        breached_at = reason.time.timestamp()
        zero_at = wait_for(
            lambda: scenario.recorder.first_time_at(0, after=breached_at - 0.001),
            timeout=10,
            what="the route to show weight 0 after the breach",
        )
        record_property("breach to weight 0, a silent receiver configured", f"{zero_at - breached_at:.3f}s")
        # One attempt at the silent receiver alone waits 10 s: the rollback did not wait for it.
        assert zero_at - breached_at < 5

        body = delivered(scenario, receivers, "RolledBack")
        assert (body.name, body.namespace, body.phase) == ("chat", namespace, Phase.ROLLED_BACK)
        assert body.rollback_reason == scenario.status().rollback_reason  # metric, value, threshold, traces
        assert body.weights.candidate == 0 and body.weights.incumbent == 100
        assert body.metadata["eventType"] == "Warning" and body.candidate == "chat-v2"


def test_a_gate_decision_and_a_success_are_told_once_each(
    scenario: Scenario, namespace: str, api_client: client.ApiClient, receivers: Receivers
) -> None:
    checks = [script_check("quality", gate_result(score("math", 0.9, 0.8)), policy=POLICY)]
    scenario.apply(
        notifying(api_client, gated_rollout(namespace, checks, [{"setWeight": 50}]), receivers.by_name())
    )
    assert ended(scenario).phase is Phase.SUCCEEDED
    decided = delivered(scenario, receivers, "GateDecided")
    assert decided.gate is not None and decided.gate.decision is GateDecision.CANARY
    succeeded = delivered(scenario, receivers, "Succeeded")
    assert succeeded.phase is Phase.SUCCEEDED and succeeded.weights.candidate == 100
    assert succeeded.checksum == decided.checksum  # the same spec
    assert [b.transition.value for b in _bodies(receivers)] == ["GateDecided", "Succeeded"]


def test_a_gate_rejection_is_told_as_a_warning(
    scenario: Scenario, namespace: str, api_client: client.ApiClient, receivers: Receivers
) -> None:
    regressed = gate_result(score("math", 0.6, 0.8))
    checks = [script_check("quality", regressed, policy=POLICY)]
    scenario.apply(
        notifying(api_client, gated_rollout(namespace, checks, [{"setWeight": 50}]), receivers.by_name())
    )
    assert ended(scenario).phase is Phase.FAILED
    body = delivered(scenario, receivers, "GateDecided")
    assert body.gate is not None and body.gate.decision is GateDecision.REJECT
    assert body.phase is Phase.FAILED and body.metadata["eventType"] == "Warning"
    assert body.weights.candidate == 0


def _bodies(receivers: Receivers) -> list[NotificationPayload]:
    return [NotificationPayload.model_validate(r.body) for r in receivers.webhook.received()]


def test_a_notification_pending_when_the_operator_dies_is_delivered_by_the_next_one(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
) -> None:
    manifest = model_rollout("chat", namespace, steps=[{"setWeight": 20}, {"pause": {}}])
    with (
        NotificationReceiver.in_thread(hold_first=True) as held,
        serving(local_bed, api_client, namespace, Behaviour()) as scenario,
    ):
        scenario.apply(notifying(api_client, manifest, {"held": ("webhook", held.url)}))
        # The first attempt is in flight (held by the receiver) when the operator dies.
        first = wait_for(lambda: held.received() or None, timeout=30, what="the first attempt")
        pending = scenario.status().notifications
        assert pending is not None and [p.transition.value for p in pending.pending] == ["Paused"]
        operator.kill()
        operator.start()
        taken = wait_for(lambda: held.taken() or None, timeout=30, what="the delivery after the restart")
        assert list(taken) == [first[0].key] and held.requests_per_key()[first[0].key] == 2
        # Delivered, it leaves status.
        scenario.wait_for_status(
            "the delivered notification to leave status",
            lambda s: s.notifications is not None and s.notifications.pending == (),
            timeout=30,
        )
