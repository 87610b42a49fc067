"""Fair shares of the tick threads: a tick hanging past `slow_after` is parked and frees its
worker, slow namespaces share a bounded number of threads, and an ordinary rollout's tick waits
for no hanging one, in seeded discrete-event runs as well."""

from __future__ import annotations

import heapq
import itertools
import math
import random

from modelgate.fair_share import FairShare

SLOW_AFTER = 2.0
SLOW_MEMORY = 300.0


def share(workers: int, threads: int | None = None) -> FairShare[str]:
    return FairShare(workers, threads or 4 * workers, slow_after=SLOW_AFTER, slow_memory=SLOW_MEMORY)


def test_at_most_workers_ticks_are_busy_at_once() -> None:
    fair = share(4)
    for index in range(10):
        fair.ask(f"ns-{index}", f"t{index}")
    assert len(fair.start(now=0.0)) == 4
    assert fair.start(now=1.0) == []
    assert fair.wake_at(now=1.0) == SLOW_AFTER


def test_a_tick_past_slow_after_is_parked_and_frees_its_worker() -> None:
    fair = share(4)
    for index in range(10):
        fair.ask(f"hostile-{index}", f"h{index}")
    fair.start(now=0.0)
    started = fair.start(now=SLOW_AFTER)  # the first four hang: parked
    assert len(started) == 4
    assert fair.is_slow("hostile-0", now=SLOW_AFTER)


def test_slow_namespaces_share_as_many_threads_as_there_are_workers() -> None:
    fair = share(4)
    fair.ask("other-hostile", "o0")
    fair.start(now=0.0)
    fair.end("other-hostile", "o0", now=10.0)  # hung: slow from now on
    for index in range(4):
        fair.ask("hostile", f"h{index}")
    fair.start(now=10.0)
    for index in range(4, 20):
        fair.ask("hostile", f"h{index}")
    fair.ask("other-hostile", "o1")
    # Four ticks hang: the slow ones' threads are used up; a slow namespace running nothing still
    # starts one, beyond them.
    assert fair.start(now=10 + SLOW_AFTER) == [("other-hostile", "o1")]
    fair.ask("other-hostile", "o2")
    assert fair.start(now=11 + SLOW_AFTER) == []  # it runs one now: within the slow ones' threads
    fair.end("hostile", "h0", now=60.0)
    fair.end("hostile", "h1", now=60.0)
    # Two threads free: the other slow namespace first (it runs fewer), each within its share of 2.
    assert fair.start(now=60.0) == [("other-hostile", "o2")]
    assert fair.running("hostile") == 2


def test_a_tenant_slow_once_is_not_queued_behind_hanging_namespaces() -> None:
    """A tick of 2.5 s (a loaded machine) marks its namespace slow; while four others hang in the
    slow namespaces' threads, its next tick still starts at once, not when theirs end (60 s)."""
    fair = share(4)
    fair.ask("ordinary", "o0")
    fair.start(now=0.0)
    for index in range(4):
        fair.ask(f"hostile-{index}", f"h{index}")
    fair.start(now=0.5)
    fair.start(now=0.5 + SLOW_AFTER)  # parked: the four hostile namespaces are slow and fill their threads
    fair.end("ordinary", "o0", now=2.5)
    assert fair.is_slow("ordinary", now=2.6)
    fair.ask("ordinary", "o1")
    assert fair.start(now=2.6) == [("ordinary", "o1")]


def test_slow_namespaces_running_nothing_leave_the_ordinary_ones_their_workers() -> None:
    """Ten namespaces known to hang each ask a tick: the slow threads take two (the workers), room
    beyond them four more (threads - workers in all), and the ordinary namespace still starts."""
    fair = share(2, threads=8)
    for index in range(10):
        fair.ask(f"hostile-{index}", f"h{index}")
        fair.start(now=0.0)
        fair.end(f"hostile-{index}", f"h{index}", now=60.0)  # each hung: slow from now on
    for index in range(10):
        fair.ask(f"hostile-{index}", f"again{index}")
    assert len(fair.start(now=61.0)) == 8 - 2
    fair.ask("ordinary", "o")
    assert fair.start(now=61.0) == [("ordinary", "o")]


def test_an_ordinary_tick_starts_beside_any_number_of_parked_ones() -> None:
    fair = share(4)
    for index in range(8):
        fair.ask(f"hostile-{index}", f"h{index}")
    fair.start(now=0.0)
    fair.start(now=SLOW_AFTER)  # the first four are parked, four more start and hang
    fair.ask("ordinary", "o")
    assert fair.start(now=2 * SLOW_AFTER) == [("ordinary", "o")]
    assert not fair.is_slow("ordinary", now=2 * SLOW_AFTER)


def test_no_more_than_threads_run_in_all() -> None:
    fair = share(2, threads=3)
    for index in range(6):
        fair.ask(f"ns-{index}", f"t{index}")
    assert len(fair.start(now=0.0)) == 2
    assert len(fair.start(now=SLOW_AFTER)) == 1


def test_a_slow_namespace_is_forgiven_after_the_memory() -> None:
    fair = share(4)
    fair.ask("once-slow", "t")
    fair.start(now=0.0)
    fair.end("once-slow", "t", now=10.0)
    assert fair.is_slow("once-slow", now=10.0 + SLOW_MEMORY - 1)
    assert not fair.is_slow("once-slow", now=10.0 + SLOW_MEMORY)


def test_a_withdrawn_tick_never_starts() -> None:
    fair = share(1)
    fair.ask("a", "first")
    fair.start(now=0.0)
    fair.ask("a", "second")
    fair.withdraw("a", "second")
    fair.end("a", "first", now=0.1)
    assert fair.start(now=0.1) == []


def test_random_workloads_keep_every_bound() -> None:
    rng = random.Random(21)
    for _ in range(50):
        workers = rng.randint(1, 8)
        fair = share(workers, threads=workers * rng.randint(1, 4))
        running: dict[str, tuple[str, float]] = {}
        tickets = itertools.count()
        now = 0.0
        for _ in range(300):
            now += rng.random()
            if running and rng.random() < 0.4:
                ticket = rng.choice(sorted(running))
                fair.end(running.pop(ticket)[0], ticket, now)
            else:
                fair.ask(f"ns-{rng.randint(0, 6)}", f"t{next(tickets)}")
            slow_before = {ns for ns in fair._namespaces if fair.is_slow(ns, now)}
            started = fair.start(now)
            for namespace, ticket in started:
                running[ticket] = (namespace, now)
            slow_now = {ns for ns, _ in running.values() if fair.is_slow(ns, now)}
            assert len(running) <= fair.threads
            assert sum(1 for ns, _ in running.values() if ns not in slow_now) <= workers
            for namespace, _ in started:
                if namespace in slow_before:
                    assert fair.running(namespace) <= math.ceil(workers / len(slow_before))


def _ordinary_waits(
    workers: int, hostile_namespaces: int, hostile_per_namespace: int
) -> list[tuple[float, float]]:
    """A discrete-event run of 10 minutes: one ordinary rollout ticking every second for 50 ms, and,
    from the fifth second, hostile rollouts whose ticks each hang for a minute (a Prometheus that
    never answers) and tick again a second later. (When, how long) each ordinary tick waited."""
    fair = share(workers)
    events: list[tuple[float, int, str, str, str]] = []  # (time, order, kind, namespace, ticket)
    order = itertools.count()
    for namespace in range(hostile_namespaces):
        for index in range(hostile_per_namespace):
            heapq.heappush(events, (5.0, next(order), "ask", f"hostile-{namespace}", f"h{namespace}-{index}"))
    heapq.heappush(events, (0.0, next(order), "ask", "ordinary", "o"))
    asked: dict[str, float] = {}
    waits: list[tuple[float, float]] = []
    while events:
        now, _, kind, namespace, ticket = heapq.heappop(events)
        if now > 600:
            break
        if kind == "ask":
            fair.ask(namespace, ticket)
            asked[ticket] = now
        elif kind == "end":
            fair.end(namespace, ticket, now)
            heapq.heappush(events, (now + 1.0, next(order), "ask", namespace, ticket))
        for started_namespace, started in fair.start(now):
            if started_namespace == "ordinary":
                waits.append((asked[started], now - asked[started]))
            took = 0.05 if started_namespace == "ordinary" else 60.0
            heapq.heappush(events, (now + took, next(order), "end", started_namespace, started))
        wake_at = fair.wake_at(now)
        if wake_at is not None:
            heapq.heappush(events, (wake_at, next(order), "wake", "", ""))
    return waits


def test_64_hostile_namespaces_delay_an_ordinary_tick_only_until_their_ticks_are_parked() -> None:
    waits = _ordinary_waits(workers=64, hostile_namespaces=64, hostile_per_namespace=1)
    assert len(waits) > 500
    assert max(wait for _, wait in waits) <= SLOW_AFTER
    assert max(wait for at, wait in waits if at > 5 + SLOW_AFTER) == 0.0


def test_64_hostile_rollouts_in_one_namespace_do_not_delay_an_ordinary_tick() -> None:
    waits = _ordinary_waits(workers=64, hostile_namespaces=1, hostile_per_namespace=64)
    assert max(wait for at, wait in waits if at > 5 + SLOW_AFTER) == 0.0


def test_hostile_namespaces_twice_the_workers_delay_an_ordinary_tick_a_wave_at_a_time() -> None:
    """Their 16 rollouts begin to hang four at a time (the workers); each wave is parked after
    SLOW_AFTER, so the ordinary tick waits out at most all of them once, then never."""
    waits = _ordinary_waits(workers=4, hostile_namespaces=8, hostile_per_namespace=2)
    waves = math.ceil(16 / 4)
    assert max(wait for _, wait in waits) <= waves * SLOW_AFTER
    assert max(wait for at, wait in waits if at > 5 + waves * SLOW_AFTER) == 0.0
