"""The notification queue against local receivers: retries until a 2xx, Slack and Teams bodies, a
receiver that never answers given up on as a metric and an Event, a refused address never asked, and
the URL never in a log. The Secret and the Event go through a stand-in for the Kubernetes client
(tests/cluster/test_notifications.py runs the same against the bed's API server)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from prometheus_client import REGISTRY
from structlog.testing import capture_logs

from modelgate.api.addresses import EgressPolicy, Refusal
from modelgate.api.notification_payload import NotificationPayload
from modelgate.api.notifications import Receiver, ReceiverKind
from modelgate.core.model import Notify
from modelgate.kube import NotFound
from modelgate.kube.client import SecretKeyValue
from modelgate.notifications import Notifier, Retries, Target
from testbed.notification_receiver import NotificationReceiver
from testbed.silent_server import SilentServer
from testbed.waiting import wait_for
from tests.support.disguised_hosts import LOOPBACK_FORMS
from tests.support.telling_server import MARKER, telling_server
from tests.unit.engine_support import INTERVAL, Outcome
from tests.unit.test_notifying import canary, notified

FAST = Retries(attempts=4, first_backoff=0.01, max_backoff=0.05, timeout=0.3)
INVOLVED = {"apiVersion": "modelgate.io/v1alpha1", "kind": "ModelRollout", "metadata": {"name": "chat"}}


@dataclass
class FakeKube:
    """The two calls the queue makes: a Secret key's value, and an Event."""

    urls: dict[str, str]
    events: list[tuple[str, str, str]] = field(default_factory=list)

    def read_secret_key(self, namespace: str, name: str, key: str) -> SecretKeyValue:
        if key not in self.urls:
            raise NotFound(None, f"Secret {namespace}/{name} has no key {key!r}")
        return SecretKeyValue(self.urls[key], {})

    def create_event(self, involved: Any, type_: str, reason: str, message: str) -> None:
        self.events.append((type_, reason, message))


def delivery_ended(notifier: Notifier, key: str, *, timeout: float, what: str) -> None:
    """Waits until the notification's delivery has ended (taken or given up on)."""
    wait_for(lambda: bool(notifier.finished([key])) or None, timeout=timeout, what=what, interval=0.02)


def target(name: str, kind: ReceiverKind = ReceiverKind.WEBHOOK) -> Target:
    receiver = Receiver.model_validate(
        {"name": name, "kind": kind, "urlSecretRef": {"name": "hooks", "key": name}}
    )
    return Target(receiver, "team-a")


@pytest.fixture
def rollback() -> Notify:
    sim = canary()
    sim.start()
    (notify,) = notified(sim.tick(analysis=Outcome.FAIL, after=INTERVAL))
    return notify


@pytest.fixture
def notifier_for() -> Iterator[Any]:
    made: list[Notifier] = []

    def make(
        kube: FakeKube, policy: EgressPolicy | None = None, retries: Retries = FAST, in_flight: int = 8
    ) -> Notifier:
        made.append(Notifier(kube, policy or EgressPolicy(allow_loopback=True), retries, in_flight))  # type: ignore[arg-type]
        return made[-1]

    yield make
    for notifier in made:
        notifier.close()


def failed_total(kind: str) -> float:
    labels = {"namespace": "", "receiver_kind": kind, "transition": "RolledBack"}
    return REGISTRY.get_sample_value("modelgate_notifications_failed_total", labels) or 0.0


def test_each_receiver_takes_it_once_after_its_retries(rollback: Notify, notifier_for: Any) -> None:
    with (
        NotificationReceiver.in_thread() as plain,
        NotificationReceiver.in_thread(fail_first=3) as flaky,
        NotificationReceiver.in_thread(status=202) as teams,
    ):
        kube = FakeKube({"plain": plain.url, "flaky": flaky.url, "teams": teams.url})
        notifier = notifier_for(kube)
        targets = (
            target("plain"),
            target("flaky", ReceiverKind.SLACK),
            target("teams", ReceiverKind.MSTEAMS),
        )
        with capture_logs() as logs:
            notifier.submit(rollback, targets, INVOLVED)
            notifier.submit(rollback, targets, INVOLVED)  # a later tick's: dropped
            delivery_ended(notifier, rollback.key, timeout=5, what="the delivery to end")
        assert plain.requests_per_key() == {rollback.key: 1}
        assert flaky.requests_per_key() == {rollback.key: 4}  # 500, 500, 500, then 200
        assert teams.requests_per_key() == {rollback.key: 1}  # 202 is taken
        body = NotificationPayload.model_validate(plain.taken()[rollback.key].body)
        assert body.key == rollback.key and body.rollback_reason is not None
        slack = flaky.taken()[rollback.key].body
        assert "RolledBack" in slack["text"] and slack["blocks"]
        assert teams.taken()[rollback.key].body["@type"] == "MessageCard"
        assert kube.events == []
        assert not any(url in repr(logs) for url in kube.urls.values())


def test_a_receiver_that_never_answers_is_given_up_on_without_holding_the_others(
    rollback: Notify, notifier_for: Any
) -> None:
    with SilentServer.in_thread() as silent, NotificationReceiver.in_thread() as plain:
        silent_url = f"{silent.address}/hook/secret-token"
        kube = FakeKube({"silent": silent_url, "plain": plain.url})
        notifier = notifier_for(kube, retries=Retries(attempts=2, first_backoff=0.01, timeout=0.3))
        before = failed_total("webhook")
        started = time.monotonic()
        with capture_logs() as logs:
            notifier.submit(rollback, (target("silent"), target("plain")), INVOLVED)
            assert time.monotonic() - started < 0.1  # submitting never waits
            wait_for(
                lambda: plain.taken() or None,
                timeout=2,
                what="the answering receiver to take it",
                interval=0.02,
            )
            assert time.monotonic() - started < FAST.timeout  # not behind the silent one
            delivery_ended(notifier, rollback.key, timeout=10, what="the silent one given up")
        ((type_, reason, message),) = kube.events
        assert (type_, reason) == ("Warning", "NotificationFailed")
        assert "silent" in message and silent_url not in message and silent.address not in message
        assert failed_total("webhook") == before + 1
        assert silent_url not in repr(logs)


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data",  # cloud metadata
        "http://127.0.0.1:9/hook",  # loopback, where the operator's own ports are
        "http://[fd00:ec2::254]/latest",
    ],
)
def test_a_refused_address_is_never_asked(rollback: Notify, notifier_for: Any, url: str) -> None:
    kube = FakeKube({"evil": url})
    notifier = notifier_for(kube, EgressPolicy(allow_loopback=False))
    with capture_logs() as logs:
        notifier.submit(rollback, (target("evil"),), INVOLVED)
        delivery_ended(notifier, rollback.key, timeout=5, what="the refusal")
    ((_, reason, message),) = kube.events
    assert reason == "NotificationFailed" and "1 attempt" in message and url not in message
    assert url not in repr(logs)


@pytest.mark.parametrize("host", LOOPBACK_FORMS)
def test_a_disguised_loopback_receiver_is_never_asked(rollback: Notify, notifier_for: Any, host: str) -> None:
    with NotificationReceiver.in_thread() as receiver:
        url = receiver.url.replace("127.0.0.1", host)
        kube = FakeKube({"evil": url})
        notifier = notifier_for(kube, EgressPolicy(allow_loopback=False))
        notifier.submit(rollback, (target("evil"),), INVOLVED)
        delivery_ended(notifier, rollback.key, timeout=5, what="the refusal")
        assert receiver.taken() == {}
    ((_, reason, message),) = kube.events
    assert reason == "NotificationFailed" and "loopback" in message


class BrokenKube(FakeKube):
    """A client whose read of one key fails outside KubeError (a bug, a library's own error)."""

    def read_secret_key(self, namespace: str, name: str, key: str) -> SecretKeyValue:
        if key == "broken":
            raise TypeError("an unexpected fault")
        return super().read_secret_key(namespace, name, key)


@pytest.mark.parametrize(
    ("broken_url", "problem"), [("http://a..b/x", "not a valid domain name"), (None, "TypeError")]
)
def test_a_receivers_own_failure_leaves_the_others_delivered(
    rollback: Notify, notifier_for: Any, broken_url: str | None, problem: str
) -> None:
    with NotificationReceiver.in_thread(fail_first=1) as plain:  # still posting when the other fails
        urls = {"plain": plain.url}
        kube = FakeKube(urls | {"broken": broken_url}) if broken_url else BrokenKube(urls)
        notifier = notifier_for(kube)
        before = failed_total("webhook")
        notifier.submit(rollback, (target("broken"), target("plain")), INVOLVED)
        delivery_ended(notifier, rollback.key, timeout=5, what="the delivery")
        assert plain.requests_per_key() == {rollback.key: 2}
        assert plain.taken()[rollback.key].status == 200
    ((_, reason, message),) = kube.events
    assert reason == "NotificationFailed" and "broken" in message and problem in message
    assert failed_total("webhook") == before + 1


def test_a_missing_secret_is_retried_and_reported_by_name(rollback: Notify, notifier_for: Any) -> None:
    kube = FakeKube({})
    notifier = notifier_for(kube)
    notifier.submit(rollback, (target("gone"),), INVOLVED)
    delivery_ended(notifier, rollback.key, timeout=5, what="the delivery to end")
    ((_, _, message),) = kube.events
    assert f"{FAST.attempts} attempt" in message and "hooks" in message


def test_posts_in_flight_are_bounded_whatever_the_receivers(rollback: Notify, notifier_for: Any) -> None:
    """Receivers that hang hold at most `in_flight` connections; the others wait their turn."""
    with SilentServer.in_thread() as silent, NotificationReceiver.in_thread() as plain:
        kube = FakeKube({"silent": f"{silent.address}/hook", "plain": plain.url})
        once = Retries(attempts=1, timeout=0.3)
        notifier = notifier_for(kube, retries=once, in_flight=1)
        started = time.monotonic()
        notifier.submit(rollback, (target("silent"), target("plain")), INVOLVED)
        wait_for(lambda: plain.taken() or None, timeout=2, what="the answering one", interval=0.02)
        assert time.monotonic() - started >= once.timeout  # it waited for the silent one's slot


def test_a_receivers_error_answer_is_told_by_status_never_by_its_body_or_url(
    rollback: Notify, notifier_for: Any
) -> None:
    with telling_server(500) as url, capture_logs() as logs:
        kube = FakeKube({"hook": f"{url}/hook"})
        notifier = notifier_for(kube)
        notifier.submit(rollback, (target("hook"),), INVOLVED)
        delivery_ended(notifier, rollback.key, timeout=10, what="the delivery")
    ((_, reason, message),) = kube.events
    assert reason == "NotificationFailed" and "HTTP 500" in message
    for shown in (message, repr(logs)):
        assert MARKER not in shown and url.removeprefix("http://") not in shown


def test_a_refused_name_is_told_by_its_kind_never_by_the_address_it_resolved_to(
    rollback: Notify, notifier_for: Any
) -> None:
    """A receiver's URL is a secret, and so is where its host leads."""
    kube = FakeKube({"inner": "http://localhost:9/hook"})
    notifier = notifier_for(kube, EgressPolicy(allow_loopback=False))
    notifier.submit(rollback, (target("inner"),), INVOLVED)
    delivery_ended(notifier, rollback.key, timeout=5, what="the refusal")
    ((_, _, message),) = kube.events
    assert Refusal.LOOPBACK.value in message
    assert "127.0.0.1" not in message and "::1" not in message and "localhost" not in message
