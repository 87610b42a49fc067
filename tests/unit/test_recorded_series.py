"""Recorded ranges answer as an instant query would have at that moment; a range query's answer
parses into one series, or the reason it cannot (several series, like an instant query's)."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

from modelgate.metrics.prometheus_http import _parse_range
from modelgate.metrics.recorded import RecordedSeries

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
T = T0.timestamp()


def test_a_moment_reads_the_sample_at_or_just_before_it() -> None:
    series = RecordedSeries(((T, 1.0), (T + 10, 2.0), (T + 20, math.nan)), step=10)
    assert series.at(T0).value == 1.0
    assert series.at(T0 + timedelta(seconds=9.5)).value == 1.0
    assert series.at(T0 + timedelta(seconds=10)).value == 2.0
    assert series.at(T0 + timedelta(seconds=21)).is_nan  # NaN stays NaN: the engine says Inconclusive
    assert series.at(T0 - timedelta(seconds=1)).is_empty  # before the range's first sample
    assert series.at(T0 + timedelta(seconds=30)).is_empty  # a step after the last sample: none then


def test_a_failed_range_is_an_error_at_every_moment() -> None:
    assert RecordedSeries(error="Prometheus at x answered HTTP 400").at(T0).error == (
        "Prometheus at x answered HTTP 400"
    )


def test_a_range_answer_parses_into_one_series() -> None:
    one = [{"metric": {}, "values": [[T, "0.5"], [T + 1, "+Inf"]]}]
    assert _parse_range(one, 1.0).points == ((T, 0.5), (T + 1, math.inf))
    assert _parse_range([], 1.0).points == ()  # matched nothing over the whole range
    two = [{"metric": {"pod": "a"}, "values": []}, {"metric": {"pod": "b"}, "values": []}]
    assert _parse_range(two, 1.0).error is not None  # as an instant query: one series, or an error
    assert _parse_range([{"metric": {}, "values": [[T, "x"]]}], 1.0).error is not None
    assert _parse_range({"resultType": "vector"}, 1.0).error is not None
