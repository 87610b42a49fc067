"""What Prometheus answers is never repeated: an error is told by its HTTP status and kind, in the
query's error (a gate check's or analysis's status message) and in the operator's log lines, never
by the answer's body (tests/unit/test_notification_delivery.py: the same for a receiver's)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from structlog.testing import capture_logs

from modelgate.api.addresses import EgressPolicy
from modelgate.metrics.prometheus_http import PrometheusClient
from tests.support.telling_server import MARKER, telling_server

BED = EgressPolicy(allow_loopback=True)


def test_a_prometheus_error_answer_is_told_by_status_never_by_its_body() -> None:
    with telling_server(403) as address, capture_logs() as logs:
        prometheus = PrometheusClient(address, timeout=2.0, egress=BED)
        try:
            error = prometheus.query("up").error or ""
            now = datetime.now(UTC)
            traces = prometheus.query_exemplars("up", now - timedelta(minutes=5), now)
        finally:
            prometheus.close()
    assert traces == []
    assert MARKER not in error and MARKER not in repr(logs)
    assert "HTTP 403" in error
    (logged,) = [line for line in logs if line["event"] == "exemplars could not be read"]
    assert logged["status"] == 403 and address.removeprefix("http://") not in repr(logged)


def test_a_reply_that_is_not_http_is_told_by_its_kind_never_by_what_it_said() -> None:
    """http.client's BadStatusLine quotes the line the server sent in place of a status line."""
    with telling_server(None) as address:
        prometheus = PrometheusClient(address, timeout=2.0, egress=BED)
        try:
            error = prometheus.query("up").error or ""
        finally:
            prometheus.close()
    assert MARKER not in error
    assert "BadStatusLine" in error or "RemoteDisconnected" in error, error
