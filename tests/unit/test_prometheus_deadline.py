"""One evaluation's queries share a deadline that a hostile Prometheus cannot stretch: one that
never answers costs one query's timeout, not one per query; one that trickles a byte at a time is
cut off at the deadline, although every byte arrives within the timeout."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from kubernetes import client

from modelgate.api import AnalysisSpec
from modelgate.api.addresses import EgressPolicy
from modelgate.kube import Kube
from modelgate.metrics import AnalysisPlan, MetricPlan
from modelgate.metrics import prometheus as prometheus_module
from modelgate.metrics.deadline import Deadline
from modelgate.metrics.prometheus import PrometheusProvider
from modelgate.metrics.prometheus_http import PrometheusClient
from testbed.silent_server import SilentServer

LOOPBACK = EgressPolicy(allow_loopback=True)  # the tests' servers listen on 127.0.0.1
AT = datetime(2026, 1, 1, tzinfo=UTC)
METRICS = 10


def plan(address: str, timeout: str) -> AnalysisPlan:
    analysis = AnalysisSpec.model_validate(
        {
            "prometheus": {"address": address, "timeout": timeout},
            "metrics": [{"name": f"m{index}", "query": f"q{index}", "max": 1} for index in range(METRICS)],
        }
    )
    return AnalysisPlan(
        namespace="tenant",
        analysis=analysis,
        request_count="requests",
        incumbent_request_count=None,
        metrics={f"m{index}": MetricPlan(candidate=f"q{index}") for index in range(METRICS)},
    )


@pytest.fixture
def silent(loopback_allowed: None) -> Iterator[SilentServer]:
    with SilentServer.in_thread() as server:
        yield server


def test_a_prometheus_that_never_answers_costs_one_timeout_per_evaluation(silent: SilentServer) -> None:
    provider = PrometheusProvider(Kube(client.ApiClient()), LOOPBACK)  # no token: no Secret read
    started = time.monotonic()
    run = provider.run(plan(silent.address, "1s"), AT)
    took = time.monotonic() - started
    assert took < 3, took  # eleven queries, not eleven timeouts
    assert run.request_count.error is not None and "did not answer within 1s" in run.request_count.error
    assert all(metric.result.error for metric in run.metrics.values())


def test_the_evaluation_deadline_cuts_a_trickling_answer(
    monkeypatch: pytest.MonkeyPatch, loopback_allowed: None
) -> None:
    monkeypatch.setattr(prometheus_module, "EVALUATION_DEADLINE", 2.0)
    provider = PrometheusProvider(Kube(client.ApiClient()), LOOPBACK)
    with SilentServer.in_thread(trickle=0.2) as trickling:
        started = time.monotonic()
        run = provider.run(plan(trickling.address, "1s"), AT)  # each byte comes within the timeout
        took = time.monotonic() - started
    assert took < 4, took
    assert run.request_count.error is not None and "within 2s" in run.request_count.error
    assert all(metric.result.error for metric in run.metrics.values())


def test_a_deadline_ends_a_request_blocked_in_a_read(silent: SilentServer) -> None:
    client = PrometheusClient(silent.address, timeout=30.0)
    try:
        started = time.monotonic()
        with Deadline(0.5) as deadline:
            result = client.query("up")
        took = time.monotonic() - started
    finally:
        client.close()
    assert deadline.passed and result.error is not None
    assert took < 3, took
