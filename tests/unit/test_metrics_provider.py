"""QueryResult: how the engine tells a value from no data and from a failure."""

from __future__ import annotations

import math

import pytest

from modelgate.core import QueryResult


def test_value() -> None:
    result = QueryResult(value=0.5, sample_count=1)
    assert (result.is_error, result.is_empty, result.is_nan) == (False, False, False)


def test_zero_is_a_value_not_empty() -> None:
    result = QueryResult(value=0.0, sample_count=1)
    assert not result.is_empty


def test_empty() -> None:
    result = QueryResult()
    assert (result.is_error, result.is_empty, result.is_nan) == (False, True, False)


def test_nan() -> None:
    result = QueryResult(value=math.nan, sample_count=1)
    assert (result.is_error, result.is_empty, result.is_nan) == (False, False, True)


def test_error() -> None:
    result = QueryResult(error="Prometheus at http://p:9090 did not answer within 5s")
    assert (result.is_error, result.is_empty, result.is_nan) == (True, False, False)


def test_error_with_value_is_refused() -> None:
    with pytest.raises(ValueError, match="no value"):
        QueryResult(value=1.0, error="boom")
