"""The notification queue: an asyncio loop of its own that posts each Notify, with retries.

The operator's notification queue: an asyncio loop in a thread of its own takes each Notify the
reconciler submits (submitting never waits) and posts it to every receiver at once, each with its
own retries and exponential backoff, so a receiver that hangs delays neither the others nor any
tick. A key is delivered once per process; a restart delivers what status still lists again (at
least once: the key lets a receiver drop the repeat). Tenants share the queue in parts
(notifications/shares.py): the keys remembered per rollout, the posts in flight per namespace. A
receiver's URL is a credential: it is read from its Secret at each attempt and never logged; what
went wrong is said by HTTP status or error type. A receiver that never takes it is a Warning Event
and modelgate_notifications_failed_total."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
import structlog

from modelgate import observability
from modelgate.api.addresses import AddressRefused, EgressPolicy
from modelgate.api.notification_payload import NotificationPayload
from modelgate.api.notifications import Receiver
from modelgate.core.model import Notify
from modelgate.core.notifying import payload
from modelgate.core.reasons import Reason, how_many
from modelgate.egress import checked_aiohttp_session
from modelgate.kube import Kube, KubeError
from modelgate.notifications.formats import body
from modelgate.notifications.shares import DeliveryMemory, NamespaceSlots

log = structlog.get_logger("modelgate.notifications")

# Posts in flight at once, whatever the receivers: tenants' receivers that hang hold this many
# connections and no more, each namespace's at most its share (NamespaceSlots).
MAX_IN_FLIGHT = 64


@dataclass(frozen=True)
class Target:
    """A receiver, and the namespace of the Secret that holds its URL; `platform_default` for the
    chart's default receivers, whose Secrets a rollout's Events (which tenants read) never name."""

    receiver: Receiver
    secret_namespace: str
    platform_default: bool = False

    @property
    def named(self) -> str:
        """The receiver as a rollout's Event names it."""
        if self.platform_default:
            return f"the platform's default receiver {self.receiver.name}"
        return f"receiver {self.receiver.name}"


@dataclass(frozen=True)
class Retries:
    attempts: int = 6
    first_backoff: float = 1.0  # seconds before the second attempt, doubled for each next one
    max_backoff: float = 30.0
    timeout: float = 10.0  # one attempt's, connection to answer

    def backoff(self, retry: int) -> float:
        return min(self.first_backoff * 2.0**retry, self.max_backoff)


class Notifier:
    def __init__(
        self, kube: Kube, egress: EgressPolicy, retries: Retries | None = None, in_flight: int = MAX_IN_FLIGHT
    ) -> None:
        self._kube = kube
        self._egress = egress
        self._retries = retries or Retries()
        self._lock = threading.Lock()
        self._memory = DeliveryMemory()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._in_flight = in_flight
        self._slots = NamespaceSlots(in_flight)

    def submit(self, notify: Notify, targets: Sequence[Target], involved: Mapping[str, Any]) -> None:
        """Queues `notify` for `targets` unless it was queued before; returns at once. `involved`:
        the rollout, for a failure's Event."""
        sent = payload(notify)
        with self._lock:
            if not self._memory.submit(sent.namespace, notify.key):
                return
            loop = self._running_loop()
        asyncio.run_coroutine_threadsafe(self._deliver(notify.key, sent, targets, involved), loop)

    def finished(self, keys: Iterable[str]) -> frozenset[str]:
        """Those of `keys` whose delivery ended, to every receiver or given up on."""
        with self._lock:
            return self._memory.finished(keys)

    def close(self) -> None:
        with self._lock:
            loop, self._loop = self._loop, None
        if loop is not None:
            loop.call_soon_threadsafe(loop.stop)

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._slots = NamespaceSlots(self._in_flight)  # of this loop
            threading.Thread(target=self._loop.run_forever, name="notifications", daemon=True).start()
        return self._loop

    async def _deliver(
        self, key: str, sent: NotificationPayload, targets: Sequence[Target], involved: Mapping[str, Any]
    ) -> None:
        try:
            async with checked_aiohttp_session(self._egress) as session:
                await asyncio.gather(*(self._deliver_one(session, sent, t, involved) for t in targets))
        finally:
            with self._lock:
                self._memory.finish(key)

    async def _deliver_one(
        self,
        session: aiohttp.ClientSession,
        sent: NotificationPayload,
        target: Target,
        involved: Mapping[str, Any],
    ) -> None:
        receiver = target.receiver
        labels = (sent.namespace, receiver.kind.value, sent.transition.value)
        problem = "no attempt"
        for attempt in range(self._retries.attempts):
            if attempt:
                await asyncio.sleep(self._retries.backoff(attempt - 1))
            try:
                async with self._slots.held(sent.namespace):
                    problem = await self._attempt(session, sent, target)
            except AddressRefused as refused:  # the URL itself: no retry helps
                problem = f"its URL {refused.refusal.value}"  # not the address its host resolved to
                break
            # This receiver's alone: raised on, it would close the session under the others.
            except Exception as error:  # its text may quote the URL
                problem = f"{type(error).__name__} (an error no retry is known to help)"
                break
            if not problem:
                observability.NOTIFICATIONS_DELIVERED.labels(*labels).inc()
                log.info("notification delivered", receiver=receiver.name, key=sent.key, attempts=attempt + 1)
                return
            log.info("notification not taken", receiver=receiver.name, key=sent.key, problem=problem)
        observability.NOTIFICATIONS_FAILED.labels(*labels).inc()
        message = (
            f"notification {sent.transition.value} ({sent.key}) to {target.named} "
            f"({receiver.kind.value}) failed after {how_many(attempt + 1, 'attempt')}: {problem}"
        )
        log.warning("notification failed", receiver=receiver.name, key=sent.key, problem=problem)
        await asyncio.to_thread(self._event, involved, message)

    async def _attempt(
        self, session: aiohttp.ClientSession, sent: NotificationPayload, target: Target
    ) -> str:
        """One post; what went wrong, or "" when the receiver took it (any 2xx)."""
        ref = target.receiver.url_secret_ref
        try:
            secret = await asyncio.to_thread(
                self._kube.read_secret_key, target.secret_namespace, ref.name, ref.key
            )
        except KubeError as error:  # names the Secret and key, never their value
            if not target.platform_default:
                return str(error)
            log.warning(
                "notification: a default receiver's Secret", receiver=target.receiver.name, error=str(error)
            )
            return "its Secret, in the operator's namespace, could not be read (the operator's log says why)"
        url = secret.text.strip()
        self._egress.check_url(url)
        timeout = aiohttp.ClientTimeout(total=self._retries.timeout)
        headers = {"Idempotency-Key": sent.key}
        try:
            async with session.post(
                url,
                json=body(target.receiver.kind, sent),
                headers=headers,
                timeout=timeout,
                allow_redirects=False,
            ) as response:
                await response.read()
                return "" if 200 <= response.status < 300 else f"HTTP {response.status}"
        except (aiohttp.ClientError, TimeoutError) as error:  # their text may quote the URL
            return f"{type(error).__name__} (no answer within {self._retries.timeout:g}s or no connection)"

    def _event(self, involved: Mapping[str, Any], message: str) -> None:
        reason = Reason.NOTIFICATION_FAILED
        try:
            self._kube.create_event(involved, reason.event_type.value, reason.value, message)
        except KubeError as error:
            log.warning("could not post the notification's Event", error=str(error))
