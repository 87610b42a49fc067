"""PrometheusClient's handling of Prometheus API answers, against a canned local HTTP server."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import math
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
from kubernetes import client

from modelgate.api import AnalysisSpec
from modelgate.api.addresses import ALLOWED_ADDRESSES_ANNOTATION, EgressPolicy, Refusal, allowed_addresses
from modelgate.core import QueryResult
from modelgate.kube import Kube
from modelgate.kube.client import SecretKeyValue
from modelgate.metrics import AnalysisPlan, CountQueries, MetricPlan, MetricProvider
from modelgate.metrics.prometheus import PrometheusProvider
from modelgate.metrics.prometheus_http import PrometheusClient

LOOPBACK = EgressPolicy(allow_loopback=True)  # the tests' servers listen on 127.0.0.1


def vector(*values: str) -> tuple[int, str]:
    series = [{"metric": {"pod": f"p{i}"}, "value": [1700000000.0, v]} for i, v in enumerate(values)]
    return 200, json.dumps({"status": "success", "data": {"resultType": "vector", "result": series}})


# PromQL text -> (HTTP status, body). The fake server answers by the `query` parameter.
CANNED: dict[str, tuple[int, str]] = {
    "one_series": vector("0.25"),
    "empty": vector(),
    "nan": vector("NaN"),
    "inf": vector("+Inf"),
    "two_series": vector("1", "2"),
    "scalar": (
        200,
        json.dumps({"status": "success", "data": {"resultType": "scalar", "result": [1.0, "3"]}}),
    ),
    "vector(1)": vector("1"),
    "range": (
        200,
        json.dumps(
            {
                "status": "success",
                "data": {"resultType": "matrix", "result": [{"metric": {}, "values": [[1.0, "1"]]}]},
            }
        ),
    ),
    "string": (
        200,
        json.dumps({"status": "success", "data": {"resultType": "string", "result": [1.0, "x"]}}),
    ),
    "not_json": (200, "<html>login</html>"),
    "bad_promql": (
        400,
        json.dumps(
            {
                "status": "error",
                "errorType": "bad_data",
                "error": 'invalid parameter "query": 1:5: parse error: unclosed left parenthesis',
            }
        ),
    ),
    "unavailable": (503, "overloaded"),
    # What an address a tenant chose may answer, and must not be shown: a metadata service's keys.
    "metadata": (403, "AccessKeyId=AKIAEXAMPLE SecretAccessKey=wJalrXUtnFEMI"),
    "redirect": (302, ""),
}


@dataclass
class FakePrometheus:
    address: str
    requests: list[tuple[str, str | None]] = field(default_factory=list)  # (query, Authorization)
    # A query named "hang" blocks until this is set: a server that never answers in time.
    release: threading.Event = field(default_factory=threading.Event)
    redirect_to: str = ""  # where the query "redirect" sends the client


@pytest.fixture
def fake() -> Iterator[FakePrometheus]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlparse(self.path)
            query = parse_qs(url.query).get("query", [""])[0]
            state.requests.append((query, self.headers.get("Authorization")))
            if url.path != "/api/v1/query":
                status, body = 404, "404 page not found"
            elif query == "redirect":
                self.send_response(302)
                self.send_header("Location", f"{state.redirect_to}/api/v1/query?query=one_series")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            elif query == "hang":
                state.release.wait(timeout=10)
                status, body = vector("1")
            else:
                status, body = CANNED[query]
            payload = body.encode()
            with contextlib.suppress(BrokenPipeError):  # a client that timed out on "hang" is gone
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state = FakePrometheus(address=f"http://127.0.0.1:{server.server_address[1]}")
    # A short poll interval only makes shutdown() return sooner; nothing waits on it otherwise.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield state
    state.release.set()
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture
def provider(fake: FakePrometheus) -> Iterator[PrometheusClient]:
    prometheus = PrometheusClient(fake.address, timeout=2.0)
    yield prometheus
    prometheus.close()


def test_one_series_gives_its_value(provider: PrometheusClient) -> None:
    assert provider.query("one_series") == QueryResult(value=0.25, sample_count=1)


def test_scalar_gives_its_value(provider: PrometheusClient) -> None:
    assert provider.query("scalar") == QueryResult(value=3.0, sample_count=1)


def test_empty_vector_is_empty_not_zero(provider: PrometheusClient) -> None:
    result = provider.query("empty")
    assert result == QueryResult(value=None, error=None, sample_count=0)
    assert result.is_empty
    assert not result.is_error


def test_nan_is_kept(provider: PrometheusClient) -> None:
    result = provider.query("nan")
    assert result.value is not None
    assert math.isnan(result.value)
    assert result.is_nan
    assert not result.is_empty
    assert not result.is_error


def test_infinity_is_a_value(provider: PrometheusClient) -> None:
    assert provider.query("inf").value == math.inf


def test_two_series_is_an_error(provider: PrometheusClient) -> None:
    result = provider.query("two_series")
    assert result == QueryResult(
        error="query returned 2 series; a metric query must return one", sample_count=2
    )
    assert result.is_error


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("range", "query returned a range vector; a metric query must return one value"),
        ("string", "query returned a value that is not a number"),
    ],
)
def test_results_of_other_shapes_are_errors(provider: PrometheusClient, query: str, message: str) -> None:
    assert provider.query(query) == QueryResult(error=message)


def test_promql_error_names_address_status_and_kind_not_the_body(
    provider: PrometheusClient, fake: FakePrometheus
) -> None:
    result = provider.query("bad_promql")
    assert result.error == f"Prometheus at {fake.address} answered HTTP 400 (bad_data)"
    assert result.value is None


@pytest.mark.parametrize(("query", "status"), [("unavailable", 503), ("metadata", 403)])
def test_an_error_status_is_reported_once_without_retries_nor_its_body(
    provider: PrometheusClient, fake: FakePrometheus, query: str, status: int
) -> None:
    assert provider.query(query).error == f"Prometheus at {fake.address} answered HTTP {status}"
    assert [asked for asked, _ in fake.requests] == [query]


def test_a_redirect_is_not_followed_and_takes_no_token_along(fake: FakePrometheus) -> None:
    elsewhere = []

    class Elsewhere(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            elsewhere.append(self.headers.get("Authorization"))
            self.send_response(204)
            self.end_headers()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Elsewhere)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    fake.redirect_to = f"http://127.0.0.1:{server.server_address[1]}"
    prometheus = PrometheusClient(fake.address, timeout=2.0, bearer_token="s3cret")
    try:
        error = prometheus.query("redirect").error
    finally:
        prometheus.close()
        server.shutdown()
        server.server_close()
    assert error is not None and "HTTP 302" in error
    assert elsewhere == []


def test_body_that_is_not_api_json_is_an_error(provider: PrometheusClient, fake: FakePrometheus) -> None:
    error = provider.query("not_json").error
    assert error is not None
    assert error.startswith(f"unexpected response from Prometheus at {fake.address}: ")


def test_wrong_path_prefix_is_an_error(fake: FakePrometheus) -> None:
    prometheus = PrometheusClient(fake.address + "/prometheus/", timeout=2.0)
    try:
        result = prometheus.query("one_series")
    finally:
        prometheus.close()
    assert result.error == f"Prometheus at {fake.address}/prometheus answered HTTP 404"


def test_connection_refused_is_an_error() -> None:
    with socket.socket() as sock:  # a port that was just free: nothing listens on it
        sock.bind(("127.0.0.1", 0))
        address = f"http://127.0.0.1:{sock.getsockname()[1]}"
    prometheus = PrometheusClient(address, timeout=2.0)
    try:
        result = prometheus.query("one_series")
    finally:
        prometheus.close()
    assert result.error is not None
    assert result.error.startswith(f"cannot connect to Prometheus at {address}: ")
    assert "refused" in result.error.lower()


def test_timeout_is_an_error(fake: FakePrometheus) -> None:
    prometheus = PrometheusClient(fake.address, timeout=0.2)
    try:
        result = prometheus.query("hang")
    finally:
        fake.release.set()
        prometheus.close()
    assert result == QueryResult(error=f"Prometheus at {fake.address} did not answer within 0.2s")


def test_bearer_token_is_sent(fake: FakePrometheus) -> None:
    prometheus = PrometheusClient(fake.address, timeout=2.0, bearer_token="s3cret\n")
    try:
        prometheus.query("one_series")
    finally:
        prometheus.close()
    assert fake.requests == [("one_series", "Bearer s3cret")]


def test_no_authorization_header_without_token(provider: PrometheusClient, fake: FakePrometheus) -> None:
    provider.query("one_series")
    assert fake.requests == [("one_series", None)]


@pytest.mark.usefixtures("loopback_allowed")
def test_provider_runs_every_query_of_a_plan_through_one_client(fake: FakePrometheus) -> None:
    analysis = AnalysisSpec.model_validate(
        {"prometheus": {"address": fake.address}, "metrics": [{"name": "m", "query": "q", "max": 1}]}
    )
    totals = CountQueries("scalar", "one_series"), CountQueries("scalar", "empty")
    metrics = {"m": MetricPlan("one_series", "scalar", totals), "gone": MetricPlan("unavailable")}
    plan = AnalysisPlan("serving", analysis, "scalar", "one_series", metrics)
    provider: MetricProvider = PrometheusProvider(Kube(client.ApiClient()), LOOPBACK)
    at = datetime(2026, 1, 1, tzinfo=UTC)
    run = provider.run(plan, at)
    measured = run.metrics["m"]
    assert (run.at, run.request_count.value, measured.result.value) == (at, 3.0, 0.25)
    assert run.incumbent_request_count is not None and run.incumbent_request_count.value == 0.25
    assert measured.query == "one_series"
    assert measured.incumbent is not None and measured.incumbent.value == 3.0
    assert measured.totals is not None
    assert [(side.requests.value, side.events.value) for side in measured.totals] == [
        (3.0, 0.25),
        (3.0, None),
    ]
    assert run.metrics["gone"].result.error is not None and run.error_count == 1


@pytest.mark.parametrize("address", ["prometheus:9090", "ftp://prometheus", "http://", ""])
def test_address_must_be_an_http_url(address: str) -> None:
    with pytest.raises(ValueError, match="not an http"):
        PrometheusClient(address)


def test_an_address_with_a_password_is_refused_without_repeating_it() -> None:
    with pytest.raises(ValueError) as refused:
        PrometheusClient("http://admin:pa55word@prometheus:9090")
    assert "pa55word" not in str(refused.value)


def test_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="timeout must be positive"):
        PrometheusClient("http://prometheus:9090", timeout=0)


MALFORMED_TOKENS = ["", " \n", "two words", "line\nbreak", "s3cr\u20act-token", "s3cr\u00e9t", "tab\tbed"]


@pytest.mark.parametrize("token", MALFORMED_TOKENS)
def test_malformed_token_is_rejected_without_echoing_it(token: str) -> None:
    with pytest.raises(ValueError, match="bearer token") as excinfo:
        PrometheusClient("http://prometheus:9090", bearer_token=token)
    assert token.strip() == "" or token not in str(excinfo.value)


class SecretHolder(Kube):
    """A Kube whose every Secret key holds `token`, the Secret annotated with `annotations`."""

    def __init__(self, token: str, annotations: dict[str, str] | None = None) -> None:
        super().__init__(client.ApiClient())
        self.token = token
        self.annotations = annotations or {}

    def read_secret_key(self, namespace: str, name: str, key: str) -> SecretKeyValue:
        return SecretKeyValue(self.token, self.annotations)


def token_plan(address: str) -> AnalysisPlan:
    analysis = AnalysisSpec.model_validate(
        {
            "prometheus": {
                "address": address,
                "bearerTokenSecretRef": {"name": "prom-token", "key": "token"},
            },
            "metrics": [{"name": "m", "query": "one_series", "max": 1}],
        }
    )
    return AnalysisPlan("serving", analysis, "one_series", None, {"m": MetricPlan("one_series")})


@pytest.mark.usefixtures("loopback_allowed")
@pytest.mark.parametrize(
    ("annotation", "allowlist", "sent"),
    [
        (None, None, False),
        ("https://prometheus.example:9090", None, False),  # another address
        ("{address}/prometheus", None, False),  # the address's origin, below another path
        ("{address}", None, True),
        ("https://prometheus.example, {address}/", None, True),
        (None, "{address}", True),  # the chart's allowlist
    ],
)
def test_a_token_goes_only_where_the_secret_or_the_allowlist_names(
    fake: FakePrometheus,
    monkeypatch: pytest.MonkeyPatch,
    annotation: str | None,
    allowlist: str | None,
    sent: bool,
) -> None:
    allowed = () if allowlist is None else allowed_addresses(allowlist.format(address=fake.address))
    annotations = (
        {} if annotation is None else {ALLOWED_ADDRESSES_ANNOTATION: annotation.format(address=fake.address)}
    )
    provider = PrometheusProvider(SecretHolder("s3cret", annotations), LOOPBACK, allowed)
    run = provider.run(token_plan(fake.address), datetime(2026, 1, 1, tzinfo=UTC))
    tokens = [authorization for _, authorization in fake.requests]
    if sent:
        assert tokens and set(tokens) == {"Bearer s3cret"} and run.error_count == 0
    else:
        error = run.metrics["m"].result.error or ""
        assert fake.requests == []  # nothing is asked without the token either
        assert (
            "spec.analysis.prometheus.bearerTokenSecretRef" in error and ALLOWED_ADDRESSES_ANNOTATION in error
        )
        assert "s3cret" not in error


@pytest.mark.parametrize(
    "address", ["http://localhost:{port}", "http://127.0.0.1:{port}", "http://2130706433:{port}"]
)
def test_a_policy_refuses_the_address_a_connection_reaches_however_it_is_named(
    fake: FakePrometheus, address: str
) -> None:
    """ "localhost" passes the URL's own check; the address its connection reaches does not."""
    port = fake.address.rsplit(":", 1)[1]
    prometheus = PrometheusClient(address.format(port=port), timeout=2.0, egress=EgressPolicy())
    try:
        error = prometheus.query("one_series").error
    finally:
        prometheus.close()
    assert error is not None and "spec.analysis.prometheus.address: refused" in error, error
    assert Refusal.LOOPBACK.value in error
    assert fake.requests == []


def test_the_api_servers_address_is_refused_even_where_loopback_is_allowed(fake: FakePrometheus) -> None:
    port = int(fake.address.rsplit(":", 1)[1])
    server = EgressPolicy(
        allow_loopback=True, api_server=frozenset({(ipaddress.ip_address("127.0.0.1"), port)})
    )
    prometheus = PrometheusClient(fake.address, timeout=2.0, egress=server)
    try:
        error = prometheus.query("one_series").error
    finally:
        prometheus.close()
    assert error is not None and Refusal.API_SERVER.value in error
    assert fake.requests == []


@pytest.mark.usefixtures("loopback_allowed")
@pytest.mark.parametrize("token", ["s3cr\u20acet-token", "two words"])
def test_malformed_token_fails_the_run_naming_the_secret_key_not_the_token(token: str) -> None:
    analysis = AnalysisSpec.model_validate(
        {
            "prometheus": {
                "address": "http://127.0.0.1:9",
                "bearerTokenSecretRef": {"name": "prom-token", "key": "token"},
            },
            "metrics": [{"name": "m", "query": "q", "max": 1}],
        }
    )
    plan = AnalysisPlan("serving", analysis, "up", None, {"m": MetricPlan("q")})
    run = PrometheusProvider(SecretHolder(token), LOOPBACK).run(plan, datetime(2026, 1, 1, tzinfo=UTC))
    error = run.metrics["m"].result.error
    assert error is not None and run.error_count == 1
    assert "bearerTokenSecretRef: Secret serving/prom-token key token: " in error
    assert token not in error and "s3cr" not in error
