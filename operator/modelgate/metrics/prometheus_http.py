"""A client of the Prometheus HTTP API: instant, range and exemplar queries.

A client of the Prometheus HTTP API (and API-compatible backends): instant, range and exemplar
queries within a timeout, without retries, their errors described without the response body."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import requests
import structlog
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException
from urllib3.util.retry import Retry

from modelgate.api import BreachTrace
from modelgate.api.addresses import (
    AddressRefused,
    EgressPolicy,
    parse_target,
)
from modelgate.core import QueryResult
from modelgate.metrics.exemplars import parse_exemplars
from modelgate.metrics.recorded import RecordedSeries
from modelgate.metrics.requests_session import checked_requests_session
from modelgate.observability import METRIC_QUERIES, METRIC_QUERY_SECONDS

# One logger name for the provider and its client.
log = structlog.get_logger("modelgate.metrics.prometheus")

# The library's default retries (3, with backoff, also on HTTP 5xx) would stretch one query far
# beyond `timeout`; the engine retries on its next tick and counts consecutive errors instead.
# `read=False`, as in requests' own default, keeps a read timeout a `requests.Timeout` (with
# `read=0` urllib3 wraps it and requests reports a ConnectionError).
ADDRESS_FIELD = "spec.analysis.prometheus.address"
_NO_RETRIES = Retry(total=0, read=False)
# PrometheusApiClientException carries only "HTTP Status Code <n> (<repr of the body bytes>)".
_HTTP_ERROR = re.compile(r"HTTP Status Code (\d+) \((b'.*'|b\".*\")\)", re.DOTALL)
# The Prometheus API's kinds of error; its `error` text, as any response body, is never shown: a
# tenant's address may be a service that answers with what it should not tell (cloud metadata).
_ERROR_TYPES = frozenset(
    {"bad_data", "execution", "timeout", "canceled", "internal", "unavailable", "not_found", "not_acceptable"}
)


_CONNECTIONS = 256


class PrometheusClient:
    """Instant queries against one Prometheus.

    `timeout` bounds connecting and each wait for response data, so a call that gets no answer
    returns an error after about `timeout` seconds.
    """

    def __init__(
        self,
        address: str,
        timeout: float = 5.0,
        bearer_token: str | None = None,
        egress: EgressPolicy | None = None,
    ) -> None:
        """`egress`: the policy a tenant's address is held to at each connection; None for an address
        the caller trusts (its own command line)."""
        try:
            parse_target(address)  # no password, no fragment: what follows may show the address
        except AddressRefused as refused:
            raise ValueError(f"the Prometheus address {refused}") from None
        if timeout <= 0:
            raise ValueError(f"Prometheus timeout must be positive, got {timeout}")
        self.address = address.rstrip("/")
        self.timeout = timeout
        headers = None if bearer_token is None else {"Authorization": f"Bearer {clean_token(bearer_token)}"}
        # Idle connections kept per Prometheus: more than the operator's tick threads, so that no
        # query opens a connection that the pool then drops (requests keeps 10 by default).
        session = checked_requests_session(egress, self.address, _NO_RETRIES, _CONNECTIONS)
        self._session, self._headers = session, headers
        self._client = PrometheusConnect(
            url=self.address, headers=headers, retry=_NO_RETRIES, timeout=timeout, session=session
        )

    def query(self, promql: str) -> QueryResult:
        return self.query_within(promql, self.timeout)[0]

    def query_within(self, promql: str, timeout: float) -> tuple[QueryResult, bool]:
        """The query with its timeout shortened to `timeout`, and whether Prometheus could not be
        reached (no connection, or no answer in time)."""
        METRIC_QUERIES.labels("prometheus").inc()
        with METRIC_QUERY_SECONDS.labels("prometheus").time():
            result = self._ask(lambda: self._client.custom_query(promql, timeout=timeout), timeout)
        if isinstance(result, _Failed):
            return QueryResult(error=result.error), result.unreachable
        return _parse_result(result), False

    def query_range(self, promql: str, start: datetime, end: datetime, step: timedelta) -> RecordedSeries:
        """The values `promql` had at every `step` from `start` to `end` (one range query)."""
        METRIC_QUERIES.labels("prometheus").inc()
        with METRIC_QUERY_SECONDS.labels("prometheus").time():
            result = self._ask(
                lambda: self._client.custom_query_range(promql, start, end, f"{step.total_seconds():g}s")
            )
        seconds = step.total_seconds()
        if isinstance(result, _Failed):
            return RecordedSeries(step=seconds, error=result.error)
        return _parse_range(result, seconds)

    def _ask(self, call: Callable[[], object], timeout: float | None = None) -> object:
        """The API's `data.result`, or why there is none."""
        try:
            return call()
        except AddressRefused as refused:  # the address a connection reached, not said
            return _Failed(f"{ADDRESS_FIELD}: refused: Prometheus at {self.address} {refused.refusal.value}")
        except requests.Timeout:  # before ConnectionError: ConnectTimeout is both
            seconds = self.timeout if timeout is None else timeout
            return _Failed(
                f"Prometheus at {self.address} did not answer within {seconds:g}s", unreachable=True
            )
        except requests.ConnectionError as exc:
            return _Failed(
                f"cannot connect to Prometheus at {self.address}: {_root_cause(exc)}", unreachable=True
            )
        except requests.TooManyRedirects as exc:
            status = exc.response.status_code if exc.response is not None else "3xx"
            return _Failed(
                f"Prometheus at {self.address} answered HTTP {status}, a redirect, which is not followed"
            )
        except PrometheusApiClientException as exc:
            return _Failed(f"Prometheus at {self.address} {_describe_http_error(str(exc))}")
        except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
            # ValueError includes a body that is not JSON (e.g. a proxy's HTML page); Key/TypeError
            # a JSON body without `data.result`. What the body said is not repeated.
            return _Failed(
                f"unexpected response from Prometheus at {self.address}: not the Prometheus API's "
                f"JSON ({type(exc).__name__})"
            )

    def query_exemplars(self, promql: str, start: datetime, end: datetime) -> list[BreachTrace]:
        """The exemplars with a trace ID on the series `promql` selects, from `start` to `end`; none
        when Prometheus has none (no exemplar storage, clients without exemplars) or cannot be asked."""
        METRIC_QUERIES.labels("prometheus").inc()
        params: dict[str, str | float] = {"query": promql, "start": start.timestamp(), "end": end.timestamp()}
        try:
            with METRIC_QUERY_SECONDS.labels("prometheus").time():
                response = self._session.get(
                    f"{self.address}/api/v1/query_exemplars",
                    params=params,
                    headers=self._headers,
                    timeout=self.timeout,
                )
            response.raise_for_status()
            return parse_exemplars(response.json().get("data"))
        except (requests.RequestException, ValueError, AttributeError) as error:
            # Their text holds the URL, and a reply that is not HTTP: the status and kind only.
            status = getattr(getattr(error, "response", None), "status_code", None)
            log.warning(
                "exemplars could not be read", query=promql, status=status, error=type(error).__name__
            )
            return []

    def close(self) -> None:
        self._client.close()


@dataclass(frozen=True)
class _Failed:
    error: str
    unreachable: bool = False


def _parse_range(result: object, step: float) -> RecordedSeries:
    """`data.result` of a range query (a matrix) as one series; more than one is an error, as for an
    instant query."""
    if not isinstance(result, list) or not all(isinstance(s, dict) and "values" in s for s in result):
        return RecordedSeries(step=step, error=f"unexpected range query result: {_shape(result)}")
    if len(result) > 1:
        return RecordedSeries(
            step=step, error=f"query returned {len(result)} series; a metric query must return one"
        )
    try:
        points = tuple((float(t), float(v)) for t, v in result[0]["values"]) if result else ()
    except (TypeError, ValueError):
        return RecordedSeries(
            step=step, error="unexpected samples in range query result: not [time, value] pairs"
        )
    return RecordedSeries(points, step)


def clean_token(token: str) -> str:
    # Tokens read from Secrets often end with a newline. Anything else that is not visible ASCII is
    # rejected here, without echoing the token: http.client would otherwise fail at query time with
    # the whole header, token included, in its error (UnicodeEncodeError), or send it mangled.
    token = token.strip()
    if not token or not all("!" <= char <= "~" for char in token):
        raise ValueError(
            "the Prometheus bearer token must be visible ASCII (no spaces, control or non-ASCII characters)"
        )
    return token


def _parse_result(result: object) -> QueryResult:
    """Turn `data.result` of an instant query into one value; the library drops `resultType`."""
    if not isinstance(result, list):
        return QueryResult(error=f"unexpected query result: {_shape(result)}, not a list of series")
    if not result:
        return QueryResult()  # empty vector
    if not isinstance(result[0], dict):
        return _sample_value(result, sample_count=1)  # scalar: [<time>, "<value>"]
    if len(result) > 1:
        return QueryResult(
            error=f"query returned {len(result)} series; a metric query must return one",
            sample_count=len(result),
        )
    series = result[0]
    if "value" not in series:  # a range vector has "values"
        return QueryResult(error="query returned a range vector; a metric query must return one value")
    return _sample_value(series["value"], sample_count=1)


def _sample_value(sample: object, sample_count: int) -> QueryResult:
    """A sample is [<unix time>, "<value>"]; values are strings such as "0.5", "NaN" or "+Inf"."""
    if not isinstance(sample, Sequence) or len(sample) != 2 or not isinstance(sample[1], str):
        return QueryResult(error=f"unexpected sample in query result: {_shape(sample)}")
    try:
        return QueryResult(value=float(sample[1]), sample_count=sample_count)
    except ValueError:
        return QueryResult(error="query returned a value that is not a number")


def _describe_http_error(message: str) -> str:
    """'answered HTTP 400 (bad_data)' from the library's exception text: the status and the API's
    kind of error, never the body."""
    match = _HTTP_ERROR.fullmatch(message)
    if match is None:
        return "failed with an HTTP error"
    status, body_repr = match.groups()
    try:
        error_type = json.loads(ast.literal_eval(body_repr)).get("errorType")
    except (ValueError, TypeError, AttributeError, SyntaxError):  # not the API's error JSON
        error_type = None
    kind = f" ({error_type})" if error_type in _ERROR_TYPES else ""
    return f"answered HTTP {status}{kind}"


def _root_cause(exc: BaseException) -> str:
    """The kind of the innermost reason (ConnectionRefusedError, gaierror, BadStatusLine), not its
    text: that can quote what the server sent in place of an HTTP answer."""
    while (reason := exc.__cause__ or exc.__context__) is not None:
        exc = reason
    return type(exc).__name__


def _shape(value: object) -> str:
    """What a JSON value is, without its content (which a tenant's address may have chosen)."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return f"a list of {len(value)}"
    return f"a JSON {type(value).__name__}"
