"""The operator's own API request rate limit (kube/request_rate.py): a burst leaves at once, then the
rate paces requests in the order they asked; the sized rate grows with the objects handled; the
limit holds across threads."""

from __future__ import annotations

import argparse
import threading
import time

import pytest

from modelgate.cli.run import _positive_float
from modelgate.kube.request_rate import BURST_SECONDS, MIN_QPS, QPS_PER_OBJECT, RateSizing, RequestRate


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_burst_leaves_at_once_and_then_the_rate_paces_each_request() -> None:
    fake = FakeTime()
    rate = RequestRate(RateSizing(qps=10, burst=3), lambda: 0, fake.clock, fake.sleep)
    waits = [rate.take() for _ in range(5)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3:] == pytest.approx([0.1, 0.1])
    fake.now += 10  # idle: the bucket fills again, but to the burst only
    assert [rate.take() for _ in range(4)] == pytest.approx([0.0, 0.0, 0.0, 0.1])


def test_waiting_requests_reserve_their_turns_in_order() -> None:
    """Callers that do not sleep here (as threads would, at once) each wait one interval longer."""
    fake = FakeTime()
    rate = RequestRate(RateSizing(qps=4, burst=1), lambda: 0, fake.clock, lambda _: None)
    assert [rate.take() for _ in range(4)] == pytest.approx([0.0, 0.25, 0.5, 0.75])


def test_the_sized_rate_follows_the_objects_handled_and_never_falls_below_the_floor() -> None:
    sizing = RateSizing()
    assert sizing.qps_for(0) == MIN_QPS and sizing.qps_for(10) == MIN_QPS
    assert sizing.qps_for(1_000) == 1_000 * QPS_PER_OBJECT > MIN_QPS
    assert sizing.burst_for(1_000) == round(1_000 * QPS_PER_OBJECT * BURST_SECONDS)
    fixed = RateSizing(qps=7.5, burst=2)
    assert (fixed.qps_for(10_000), fixed.burst_for(10_000)) == (7.5, 2)


def test_more_objects_raise_the_rate_of_a_running_limit() -> None:
    fake = FakeTime()  # no time passes: each caller reserves a turn behind the others
    handled = [0]
    rate = RequestRate(RateSizing(burst=1), lambda: handled[0], fake.clock, lambda _: None)
    rate.take()
    assert rate.take() == pytest.approx(1 / MIN_QPS)
    handled[0] = 400  # 200 a second: the two reserved turns are paid at the new rate
    assert rate.take() == pytest.approx(2 / (400 * QPS_PER_OBJECT))


def test_threads_together_are_held_to_the_rate() -> None:
    qps, burst, threads, each = 400.0, 4, 8, 10
    rate = RequestRate(RateSizing(qps=qps, burst=burst), lambda: 0)
    started = time.monotonic()
    workers = [threading.Thread(target=lambda: [rate.take() for _ in range(each)]) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    took = time.monotonic() - started
    assert took >= (threads * each - burst) / qps * 0.95, took


@pytest.mark.parametrize("flag", ["0", "-1", "nan", "inf"])
def test_a_rate_that_is_not_a_finite_positive_number_is_refused_by_the_flag(flag: str) -> None:
    """`--api-qps inf` once reached round(inf) in the burst's sizing and stopped the start-up."""
    with pytest.raises(argparse.ArgumentTypeError, match="finite number above 0"):
        _positive_float(flag)
