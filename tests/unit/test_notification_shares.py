"""Tenants share the notification queue in parts: one tenant's many notifications do not push
another's keys out of the queue's memory, and one tenant's receivers that hang hold only their
namespace's share of the posts in flight."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from modelgate.core.model import Notify
from modelgate.notifications import Retries
from modelgate.notifications.shares import NAMESPACE_SHARE
from testbed.notification_receiver import NotificationReceiver
from testbed.silent_server import SilentServer
from testbed.waiting import wait_for
from tests.unit.test_notification_delivery import (
    INVOLVED,
    FakeKube,
    delivery_ended,
    notifier_for,
    rollback,
    target,
)

__all__ = ["notifier_for", "rollback"]  # fixtures


def of_namespace(notify: Notify, namespace: str, number: int) -> Notify:
    """Another rollout's notification, in `namespace`."""
    uid = f"{namespace}-{number:05d}"
    return dataclasses.replace(notify, key=f"{uid}/RolledBack/1", namespace=namespace, uid=uid)


def test_another_tenants_many_notifications_keep_a_rollouts_keys_remembered(
    rollback: Notify, notifier_for: Any
) -> None:
    with NotificationReceiver.in_thread() as plain:
        notifier = notifier_for(FakeKube({"plain": plain.url}))
        notifier.submit(rollback, (target("plain"),), INVOLVED)
        delivery_ended(notifier, rollback.key, timeout=5, what="the delivery to end")
        noisy = [of_namespace(rollback, "noisy", n) for n in range(5000)]
        for notify in noisy:
            notifier.submit(notify, (), INVOLVED)
        wait_for(
            lambda: len(notifier.finished(n.key for n in noisy[-10:])) == 10 or None,
            timeout=30,
            what="the noisy tenant's deliveries to end",
        )

        assert notifier.finished([rollback.key]) == {rollback.key}  # its status drops it
        notifier.submit(rollback, (target("plain"),), INVOLVED)  # a later tick's: dropped
        time.sleep(0.2)
        assert plain.requests_per_key() == {rollback.key: 1}


def test_a_tenants_hanging_receivers_hold_its_share_and_others_posts_go_on(
    rollback: Notify, notifier_for: Any
) -> None:
    in_flight = 2 * NAMESPACE_SHARE  # a share of 2 posts
    hanging = Retries(attempts=1, timeout=1.5)
    with SilentServer.in_thread() as silent, NotificationReceiver.in_thread() as plain:
        kube = FakeKube({"silent": f"{silent.address}/hook", "plain": plain.url})
        notifier = notifier_for(kube, retries=hanging, in_flight=in_flight)
        noisy = [of_namespace(rollback, "noisy", number) for number in range(in_flight)]
        for notify in noisy:
            notifier.submit(notify, (target("silent"),), INVOLVED)
        time.sleep(0.3)  # the silent posts hold what they may
        started = time.monotonic()
        notifier.submit(rollback, (target("plain"),), INVOLVED)
        wait_for(lambda: plain.taken() or None, timeout=5, what="the other tenant's post")
        waited = time.monotonic() - started
        every_key = [n.key for n in noisy]
        wait_for(
            lambda: len(notifier.finished(every_key)) == len(every_key) or None,
            timeout=4 * hanging.timeout + 4,
            what="the silent posts to be given up on",
        )

    assert waited < hanging.timeout / 2
