"""Plays the gateway in the local bed: sends a steady rate of chat requests to model server doubles,
split by the backend weights of one HTTPRoute rule, and follows the route as the operator edits it.
A rule's RequestMirror filters copy their share of the requests to their backends (route_mirrors.py);
the copies' answers are discarded, so clients only ever get the answer of the backend that served them.

Weight parsing and scheduling are pure functions (tested without a cluster). The route watch runs in
a thread, so the blocking Kubernetes client never stalls the event loop that sends the traffic.
Traffic only ever goes to loopback addresses.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import itertools
import json
import signal
import sys
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, cast
from urllib.parse import urlsplit

import aiohttp
import structlog
from kubernetes import config as kube_config
from kubernetes import watch as kube_watch
from kubernetes.client import CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from testbed.route_mirrors import Mirrors, MirrorSampler, parse_mirrors

log = structlog.get_logger(__name__)

GATEWAY_GROUP = "gateway.networking.k8s.io"
GATEWAY_VERSION = "v1"
HTTPROUTES = "httproutes"
DEFAULT_WEIGHT = 1  # Gateway API: a backendRef without a weight has weight 1
CHAT_PATH = "/v1/chat/completions"
# The model name clients send: every version in a rollout serves it (vLLM's --served-model-name).
SERVED_MODEL = "chat"
CHAT_REQUEST = {
    "model": SERVED_MODEL,
    "messages": [{"role": "user", "content": "Say hello in one sentence."}],
    "max_tokens": 32,
}
GATEWAY_BACKEND = "gateway"  # the one backend of a driver that sends to a real gateway
WATCH_BACKOFF_MIN = 0.5
WATCH_BACKOFF_MAX = 10.0

Weights = dict[str, int]
RouteChange = Callable[[Weights, Mirrors], None]


class RouteError(ValueError):
    """The HTTPRoute cannot be read as asked (missing, no such rule, a malformed backendRef)."""


def parse_backend_weights(route: Mapping[str, Any], rule_index: int = 0) -> Weights:
    """The backend weights of rule `rule_index`, in the route's order. Weight 0 means no traffic;
    backendRefs naming the same backend add up."""
    name = route.get("metadata", {}).get("name", "<unnamed>")
    rules = route.get("spec", {}).get("rules") or []
    if not 0 <= rule_index < len(rules):
        raise RouteError(f"HTTPRoute {name} has {len(rules)} rule(s); rule index {rule_index} does not exist")
    weights: Weights = {}
    for ref in rules[rule_index].get("backendRefs") or []:
        backend = ref.get("name")
        weight = ref.get("weight", DEFAULT_WEIGHT)
        if not isinstance(backend, str) or not backend:
            raise RouteError(f"HTTPRoute {name} rule {rule_index}: a backendRef has no name")
        if isinstance(weight, bool) or not isinstance(weight, int) or weight < 0:
            raise RouteError(
                f"HTTPRoute {name} rule {rule_index}: backend {backend} has invalid weight {weight!r}"
            )
        weights[backend] = weights.get(backend, 0) + weight
    return weights


def require_loopback_url(url: str) -> str:
    """`url` without a trailing slash, if it is plain http to a loopback IP address."""
    parts = urlsplit(url)
    try:
        loopback = ipaddress.ip_address(parts.hostname or "").is_loopback
    except ValueError:
        loopback = False
    if parts.scheme != "http" or not loopback:
        raise ValueError(
            f"{url!r} is not an http:// URL on a loopback IP address; traffic may only go to loopback "
            "addresses such as http://127.0.0.1:8000"
        )
    return url.rstrip("/")


def parse_backend_arg(text: str) -> tuple[str, str]:
    """`NAME=URL` from the command line."""
    name, sep, url = text.partition("=")
    if not sep or not name:
        raise ValueError(f"{text!r} is not NAME=URL")
    return name, require_loopback_url(url)


class SmoothWeightedRoundRobin:
    """nginx's smooth weighted round robin: each cycle of sum(weights) picks gives every backend
    exactly its weight, interleaved as evenly as possible (90/10 sends one in ten to the light one)."""

    def __init__(self, weights: Mapping[str, int] | None = None) -> None:
        self.set_weights(weights or {})

    def set_weights(self, weights: Mapping[str, int]) -> None:
        # The cycle restarts, so the split is exact from the change on.
        self._weights = {name: weight for name, weight in weights.items() if weight > 0}
        self._current = dict.fromkeys(self._weights, 0)

    def pick(self) -> str | None:
        """The next backend, or None when no backend has weight."""
        total = sum(self._weights.values())
        if total == 0:
            return None
        for name, weight in self._weights.items():
            self._current[name] += weight
        chosen = max(self._current, key=self._current.__getitem__)
        self._current[chosen] -= total
        return chosen


@dataclass
class TrafficStats:
    sent: Counter[str] = field(default_factory=Counter)
    """Requests sent, per backend."""
    responses: Counter[tuple[str, int]] = field(default_factory=Counter)
    """Answers, per (backend, HTTP status)."""
    failed: Counter[str] = field(default_factory=Counter)
    """Requests that got no HTTP answer (refused connection, timeout), per backend."""
    mirrored: Counter[str] = field(default_factory=Counter)
    """Copies sent by a RequestMirror filter, per backend; their answers are not the client's."""
    unroutable: int = 0
    """Ticks with nowhere to send: no backend with weight, or no URL for the chosen backend."""

    def as_dict(self) -> dict[str, Any]:
        responses: dict[str, dict[str, int]] = {}
        for (backend, status), count in sorted(self.responses.items()):
            responses.setdefault(backend, {})[str(status)] = count
        return {
            "sent": dict(self.sent),
            "responses": responses,
            "failed": dict(self.failed),
            "mirrored": dict(self.mirrored),
            "unroutable": self.unroutable,
        }


class TrafficDriver:
    """Sends `rps` chat requests a second to the `targets` (backend name -> the base URLs of its
    pods, taken in turn as a Service would), split by the current weights. Call its methods from
    the event loop's thread."""

    def __init__(
        self,
        targets: Mapping[str, Sequence[str]],
        *,
        rps: float = 20.0,
        max_in_flight: int = 32,
        request_timeout: float = 10.0,
    ) -> None:
        if rps <= 0 or max_in_flight < 1:
            raise ValueError("rps must be positive and max_in_flight at least 1")
        self._targets = {
            name: itertools.cycle([require_loopback_url(url) for url in urls])
            for name, urls in targets.items()
            if urls
        }
        self._interval = 1.0 / rps
        self._max_in_flight = max_in_flight
        self._timeout = aiohttp.ClientTimeout(total=request_timeout)
        self._weights: Weights = {}
        self._scheduler = SmoothWeightedRoundRobin()
        self._mirrors = MirrorSampler()
        self._stop = asyncio.Event()
        self.stats = TrafficStats()

    def set_weights(self, weights: Mapping[str, int]) -> None:
        if dict(weights) == self._weights:
            return  # a re-list that changed nothing must not restart the scheduler's cycle
        self._weights = dict(weights)
        self._scheduler.set_weights(weights)
        log.info("route weights", weights=self._weights)
        unknown = [name for name, weight in self._weights.items() if weight > 0 and name not in self._targets]
        if unknown:
            log.warning("weighted backends without a URL; their share is unroutable", backends=unknown)

    def set_mirrors(self, mirrors: Mapping[str, float]) -> None:
        if dict(mirrors) != self._mirrors.mirrors():
            self._mirrors.set_mirrors(mirrors)
            log.info("route mirrors", mirrors=dict(mirrors))

    def current_weights(self) -> Weights:
        return dict(self._weights)

    def stop(self) -> None:
        self._stop.set()

    async def run(self, duration: float | None = None, max_requests: int | None = None) -> TrafficStats:
        """Sends traffic until `stop()`, `duration` seconds or `max_requests` ticks (unroutable ones
        included), then waits for the answers still in flight."""
        loop = asyncio.get_running_loop()
        deadline = None if duration is None else loop.time() + duration
        in_flight = asyncio.Semaphore(self._max_in_flight)
        tasks: set[asyncio.Task[None]] = set()
        ticks = 0
        next_at = loop.time()
        async with aiohttp.ClientSession(timeout=self._timeout) as session:
            while (max_requests is None or ticks < max_requests) and await self._tick_at(next_at, deadline):
                ticks += 1
                backend = self._scheduler.pick()
                pods = self._targets.get(backend) if backend is not None else None
                url = next(pods) if pods is not None else None
                if backend is None or url is None:
                    self.stats.unroutable += 1
                else:
                    await in_flight.acquire()
                    self.stats.sent[backend] += 1
                    task = asyncio.create_task(self._send(session, backend, url, in_flight))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                    for target, copy_url in self._copies():
                        self.stats.mirrored[target] += 1
                        copy = asyncio.create_task(self._send_copy(session, target, copy_url))
                        tasks.add(copy)
                        copy.add_done_callback(tasks.discard)
                # Late ticks catch up by at most one interval: a stall must not end in a burst.
                next_at = max(next_at + self._interval, loop.time() - self._interval)
            await asyncio.gather(*tasks)
        return self.stats

    async def _tick_at(self, at: float, deadline: float | None) -> bool:
        """Waits until `at`; False if the run ends first."""
        if deadline is not None and at >= deadline:
            return False
        try:
            await asyncio.wait_for(
                self._stop.wait(), timeout=max(0.0, at - asyncio.get_running_loop().time())
            )
        except TimeoutError:
            return True
        return False

    def _copies(self) -> list[tuple[str, str]]:
        """(backend, pod URL) of each copy of the request just sent; copies to a backend without a URL
        are lost, as a gateway's would be."""
        targets = ((name, self._targets.get(name)) for name in self._mirrors.pick())
        return [(name, next(pods)) for name, pods in targets if pods is not None]

    async def _send_copy(self, session: aiohttp.ClientSession, backend: str, url: str) -> None:
        try:
            async with session.post(url + CHAT_PATH, json=CHAT_REQUEST) as response:
                await response.read()  # discarded: the client got the answer of the backend that served it
        except (aiohttp.ClientError, TimeoutError) as error:
            log.debug("mirrored copy failed", backend=backend, error=repr(error))

    async def _send(
        self, session: aiohttp.ClientSession, backend: str, url: str, in_flight: asyncio.Semaphore
    ) -> None:
        try:
            async with session.post(url + CHAT_PATH, json=CHAT_REQUEST) as response:
                await response.read()
                self.stats.responses[(backend, response.status)] += 1
        except (aiohttp.ClientError, TimeoutError) as error:
            self.stats.failed[backend] += 1
            log.debug("request failed", backend=backend, error=repr(error))
        finally:
            in_flight.release()


class HTTPRouteWatcher:
    """Reads one HTTPRoute rule's weights and follows its changes. A route or rule the gateway
    could not use routes nothing, so it reports empty weights."""

    def __init__(
        self,
        api: CustomObjectsApi,
        namespace: str,
        name: str,
        rule_index: int = 0,
        *,
        watch_timeout: int = 60,
        resource: tuple[str, str, str] = (GATEWAY_GROUP, GATEWAY_VERSION, HTTPROUTES),
        parse: Callable[[Mapping[str, Any]], tuple[Weights, Mirrors]] | None = None,
    ) -> None:
        """`resource` (group, version, plural) and `parse` (the object's weights and mirrors) follow
        another kind of route: testbed/route_kinds.py."""
        self._api = api
        self._name = f"{namespace}/{name}"
        self._list_args = (*resource[:2], namespace, resource[2])
        self._selector = f"metadata.name={name}"
        self._parse = parse or (
            lambda route: (parse_backend_weights(route, rule_index), parse_mirrors(route, rule_index))
        )
        self._watch_timeout = watch_timeout
        self._stopping = threading.Event()
        self._watch: Any = None

    def read(self) -> tuple[Weights, Mirrors, str]:
        """The rule's weights and mirrors, and the resourceVersion a watch resumes from (blocking)."""
        listing = cast(
            "dict[str, Any]",
            self._api.list_namespaced_custom_object(*self._list_args, field_selector=self._selector),
        )
        items = listing.get("items") or []
        if not items:
            raise RouteError(f"{self._list_args[3]} {self._name} not found")
        weights, mirrors = self._parse(items[0])
        return weights, mirrors, str(listing["metadata"]["resourceVersion"])

    def follow(self, on_change: RouteChange) -> None:
        """Calls `on_change` from a daemon thread with the weights and mirrors after each change (and
        after each re-list, which may repeat them), until `stop()`."""
        thread = threading.Thread(
            target=self._follow, args=(on_change,), name=f"watch {self._name}", daemon=True
        )
        thread.start()

    def stop(self) -> None:
        """Ends the watch without waiting for the thread (it may sit in a blocking read)."""
        self._stopping.set()
        if self._watch is not None:
            self._watch.stop()

    def _follow(self, on_change: RouteChange) -> None:
        backoff = WATCH_BACKOFF_MIN
        while not self._stopping.is_set():
            try:
                self._list_and_watch(on_change)
                backoff = WATCH_BACKOFF_MIN
            except Exception as error:  # whatever broke the watch, the cure is a re-list
                if self._stopping.is_set():
                    return
                if isinstance(error, ApiException) and error.status == HTTPStatus.GONE:
                    continue  # the watch merely expired
                log.warning(
                    "route watch interrupted; re-listing",
                    route=self._name,
                    error=str(error),
                    retry_in=backoff,
                )
                self._stopping.wait(backoff)
                backoff = min(backoff * 2, WATCH_BACKOFF_MAX)

    def _list_and_watch(self, on_change: RouteChange) -> None:
        try:
            weights, mirrors, resource_version = self.read()
        except RouteError:
            on_change({}, {})
            raise
        on_change(weights, mirrors)
        self._watch = kube_watch.Watch()  # type: ignore[no-untyped-call]
        if self._stopping.is_set():  # stop() came before this watch existed
            return
        for event in self._watch.stream(
            self._api.list_namespaced_custom_object,
            *self._list_args,
            field_selector=self._selector,
            resource_version=resource_version,
            timeout_seconds=self._watch_timeout,
            _request_timeout=self._watch_timeout + 10,  # a dead connection must not hang the thread
        ):
            if self._stopping.is_set():
                return
            if event["type"] == "DELETED":
                on_change({}, {})
            elif event["type"] in ("ADDED", "MODIFIED"):
                on_change(*self._usable(event["object"]))

    def _usable(self, route: Mapping[str, Any]) -> tuple[Weights, Mirrors]:
        try:
            weights, mirrors = self._parse(route)
        except RouteError as error:
            log.warning("route unusable; routing nothing", route=self._name, error=str(error))
            return {}, {}
        return weights, mirrors if weights else {}


async def drive_route(
    driver: TrafficDriver,
    watcher: HTTPRouteWatcher,
    *,
    duration: float | None = None,
    max_requests: int | None = None,
) -> TrafficStats:
    """Runs `driver` with the route's weights, following the route until the run ends. Raises
    RouteError at once if the route cannot be used."""
    weights, mirrors, _ = await asyncio.to_thread(watcher.read)
    driver.set_weights(weights)
    driver.set_mirrors(mirrors)
    loop = asyncio.get_running_loop()

    def on_change(weights: Weights, mirrors: Mirrors) -> None:  # called from the watch thread
        loop.call_soon_threadsafe(driver.set_weights, weights)
        loop.call_soon_threadsafe(driver.set_mirrors, mirrors)

    watcher.follow(on_change)
    try:
        return await driver.run(duration=duration, max_requests=max_requests)
    finally:
        watcher.stop()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m testbed.traffic_driver", description=__doc__)
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--route", required=True, help="HTTPRoute name")
    parser.add_argument("--rule-index", type=int, default=0)
    parser.add_argument(
        "--backend",
        action="append",
        required=True,
        type=_backend_arg,
        metavar="NAME=URL",
        help="base URL of a double serving a backendRef; repeat per backend and per pod",
    )
    parser.add_argument("--rps", type=float, default=20.0)
    parser.add_argument("--duration", type=float, default=None, help="seconds; default until SIGINT/SIGTERM")
    parser.add_argument("--max-in-flight", type=int, default=32)
    return parser


def _backend_arg(text: str) -> tuple[str, str]:
    try:
        return parse_backend_arg(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from error


async def _drive(args: argparse.Namespace, api: CustomObjectsApi) -> TrafficStats:
    targets: dict[str, list[str]] = {}
    for backend, url in args.backend:
        targets.setdefault(backend, []).append(url)
    driver = TrafficDriver(targets, rps=args.rps, max_in_flight=args.max_in_flight)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, driver.stop)
    watcher = HTTPRouteWatcher(api, args.namespace, args.route, args.rule_index)
    return await drive_route(driver, watcher, duration=args.duration)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    api = CustomObjectsApi(kube_config.new_client_from_config(config_file=args.kubeconfig))  # type: ignore[no-untyped-call]
    try:
        stats = asyncio.run(_drive(args, api))
    except RouteError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(json.dumps(stats.as_dict()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())


def gateway_driver(url: str, *, rps: float, max_in_flight: int = 64) -> TrafficDriver:
    """Sends every request to a real gateway at `url`, which splits them by the route itself."""
    driver = TrafficDriver({GATEWAY_BACKEND: [url]}, rps=rps, max_in_flight=max_in_flight)
    driver.set_weights({GATEWAY_BACKEND: 1})
    return driver


class BackgroundTraffic:
    """Drives traffic from a thread of its own, so a test or the demo can go on: along a route the
    driver follows with `watcher`, or without one to where its weights say (a real gateway)."""

    def __init__(self, driver: TrafficDriver, watcher: HTTPRouteWatcher | None = None) -> None:
        self.driver = driver
        self._watcher = watcher
        self._loop: asyncio.AbstractEventLoop | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="traffic", daemon=True)

    def __enter__(self) -> BackgroundTraffic:
        self._thread.start()
        self._started.wait(timeout=30)
        if self._error is not None:
            raise self._error
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> TrafficStats:
        if self._loop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self.driver.stop)
        self._thread.join(timeout=30)
        return self.driver.stats

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._loop.call_soon(self._started.set)
            if self._watcher is None:
                await self.driver.run()
            else:
                await drive_route(self.driver, self._watcher)

        try:
            asyncio.run(main())
        except BaseException as error:  # reported to the starting thread, or logged after
            self._error = error
            self._started.set()
            log.error("traffic stopped", error=repr(error))
