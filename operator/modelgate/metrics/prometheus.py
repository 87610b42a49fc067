"""The Prometheus metric provider (and API-compatible backends: Thanos, Mimir, ...): PromQL from the
presets and user templates, run as instant queries over the HTTP API."""

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

from modelgate.api import BreachTrace, MetricSpec, ModelRolloutSpec, PodValue, RollbackReason, WorkloadRef
from modelgate.api.addresses import (
    ALLOWED_ADDRESSES_ANNOTATION,
    AddressRefused,
    EgressPolicy,
    allowed_addresses,
    parse_target,
    token_may_go,
)
from modelgate.api.analysis import SecretKeyRef
from modelgate.api.duration import parse_duration
from modelgate.api.fields import MAX_QUERY_TIMEOUT
from modelgate.core import AnalysisRun, QueryResult
from modelgate.core.limits import clip
from modelgate.egress import TOKEN_ADDRESSES_ENV, policy_from_environment, token_allowlist
from modelgate.kube import Kube, KubeError
from modelgate.metrics.checked_session import checked_session
from modelgate.metrics.context import Side
from modelgate.metrics.deadline import Deadline
from modelgate.metrics.exemplars import PODS_KEPT, parse_exemplars, pod_regex, worst_pods, worst_traces
from modelgate.metrics.promql_plan import analysis_plan
from modelgate.metrics.provider import AnalysisPlan, BreachEvidence, run_plan
from modelgate.metrics.recorded import RecordedSeries
from modelgate.observability import METRIC_QUERIES, METRIC_QUERY_SECONDS

# The library's default retries (3, with backoff, also on HTTP 5xx) would stretch one query far
# beyond `timeout`; the engine retries on its next tick and counts consecutive errors instead.
# `read=False`, as in requests' own default, keeps a read timeout a `requests.Timeout` (with
# `read=0` urllib3 wraps it and requests reports a ConnectionError).
_NO_RETRIES = Retry(total=0, read=False)
# PrometheusApiClientException carries only "HTTP Status Code <n> (<repr of the body bytes>)".
_HTTP_ERROR = re.compile(r"HTTP Status Code (\d+) \((b'.*'|b\".*\")\)", re.DOTALL)
# The Prometheus API's kinds of error; its `error` text, as any response body, is never shown: a
# tenant's address may be a service that answers with what it should not tell (cloud metadata).
_ERROR_TYPES = frozenset(
    {"bad_data", "execution", "timeout", "canceled", "internal", "unavailable", "not_found", "not_acceptable"}
)
_MAX_DETAIL = 300
ADDRESS_FIELD = "spec.analysis.prometheus.address"
TOKEN_FIELD = "spec.analysis.prometheus.bearerTokenSecretRef"
_CONNECTIONS = 256
# The queries of one evaluation (and the evidence of one breach) share this deadline, so that one
# tick holds an operator thread no longer than this, however its Prometheus answers.
EVALUATION_DEADLINE = parse_duration(MAX_QUERY_TIMEOUT).total_seconds()
log = structlog.get_logger("modelgate.metrics.prometheus")


class TokenUnavailable(ValueError):
    """The rollout's bearer token cannot be read, or may not be sent to the address."""


class PrometheusProvider:
    """MetricProvider: one client per Prometheus address, timeout and bearer token, kept across ticks.
    A tenant's address is held to the process's egress policy, and a Secret's token goes only to an
    address the Secret's annotation or the operator's allowlist names."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        self.egress = policy_from_environment([kube.server_url])
        self.token_allowlist = token_allowlist()
        self._clients: dict[tuple[str, float, str | None], PrometheusClient] = {}

    def plan(self, spec: ModelRolloutSpec, namespace: str) -> AnalysisPlan:
        # An InferencePool side's series are its Pods' (unless its podRegex says otherwise): listed
        # by the pool's selector each time, so Pods that come and go are followed.
        sides: tuple[tuple[Side, WorkloadRef], ...] = (
            ("incumbent", spec.incumbent),
            ("candidate", spec.candidate),
        )
        pool_pods = {
            side: self.kube.pool_pods(namespace, ref.name)
            for side, ref in sides
            if ref.inference_pool is not None and ref.pod_regex is None
        }
        return analysis_plan(spec, namespace, pool_pods)

    def run(self, plan: AnalysisPlan, at: datetime) -> AnalysisRun:
        try:
            client = self.client(plan)
        except ValueError as error:  # a refused address, an unreadable or withheld token
            # Like an unreachable Prometheus: held, then paused or rolled back per the spec's policy.
            queries = {name: metric.candidate for name, metric in plan.metrics.items()}
            return AnalysisRun.failed(queries, at, str(error))
        with Deadline(EVALUATION_DEADLINE) as deadline:
            return run_plan(plan, at, _Budgeted(client, deadline).query)

    def explain(self, spec: ModelRolloutSpec, namespace: str, reason: RollbackReason) -> BreachEvidence:
        """BreachExplainer: the exemplars of the breaching metric's series over its window (trace IDs
        and pods), and the metric's query over each candidate pod alone."""
        analysis = spec.analysis
        metric = next((m for m in analysis.metrics if m.name == reason.metric), None) if analysis else None
        if metric is None:
            return BreachEvidence()
        try:
            plan = self.plan(spec, namespace)
            client = self.client(plan)
            measured = plan.metrics[metric.name]
            exemplars = measured.exemplars or measured.candidate
            with Deadline(EVALUATION_DEADLINE):
                traces = client.query_exemplars(exemplars, reason.time - plan.window, reason.time)
                pods = self._per_pod(spec, namespace, metric, measured.candidate, client)
        except (KubeError, ValueError) as error:  # the pods, the token or a plan cannot be had
            log.warning("no evidence for the breach", metric=metric.name, error=str(error))
            return BreachEvidence()
        return BreachEvidence(worst_traces(traces), pods)

    def _per_pod(
        self, spec: ModelRolloutSpec, namespace: str, metric: MetricSpec, query: str, client: PrometheusClient
    ) -> tuple[PodValue, ...]:
        """The metric's query with the candidate's podRegex narrowed to each pod in turn; nothing when
        the query does not select by pod (a gateway's series, a template without the podRegex)."""
        values: dict[str, float | None] = {}
        for pod in self._candidate_pods(spec, namespace)[:PODS_KEPT]:
            alone = spec.candidate.model_copy(update={"pod_regex": pod_regex(pod)})
            pod_query = self.plan(spec.model_copy(update={"candidate": alone}), namespace).metrics[
                metric.name
            ]
            if pod_query.candidate == query:
                return ()
            values[pod] = client.query(pod_query.candidate).value
        return worst_pods(values, lower_is_worse=metric.max is None and metric.min is not None)

    def _candidate_pods(self, spec: ModelRolloutSpec, namespace: str) -> list[str]:
        candidate = spec.candidate
        if candidate.inference_pool is not None:
            return sorted(pod.name for pod in self.kube.pool_pods(namespace, candidate.name) or [])
        return self.kube.deployment_pods(namespace, candidate.name)

    def client(self, plan: AnalysisPlan, address: str | None = None) -> PrometheusClient:
        """The client of the plan's Prometheus (or of `address`, the same one reached another way),
        with its timeout and bearer token. Raises ValueError naming the field: a refused address, a
        token that cannot be read or may not go to the address."""
        prometheus = plan.analysis.prometheus
        address = address or prometheus.address
        self._check(address)
        token = None
        if prometheus.bearer_token_secret_ref is not None:
            token = self._token(plan.namespace, prometheus.bearer_token_secret_ref, address)
        return self._client(address, prometheus.timeout_timedelta.total_seconds(), token)

    def client_without_token(self, address: str, timeout: float = 5.0) -> PrometheusClient:
        """A client of `address` under the same egress policy, sending no token."""
        self._check(address)
        return self._client(address, timeout, None)

    def _check(self, address: str) -> None:
        try:
            self.egress.check_url(address)
        except AddressRefused as refused:  # never the address itself: it may hold a password
            raise ValueError(f"{ADDRESS_FIELD}: refused: the address {refused}") from None

    def _client(self, address: str, timeout: float, token: str | None) -> PrometheusClient:
        key = (address, timeout, token)
        if key not in self._clients:
            self._clients[key] = PrometheusClient(
                address, timeout=timeout, bearer_token=token, egress=self.egress
            )
        return self._clients[key]

    def _token(self, namespace: str, ref: SecretKeyRef, address: str) -> str:
        """The Secret's token, when the Secret (or the operator's allowlist) says it may go to
        `address`; the messages name the Secret and its key, never the token."""
        secret = f"Secret {namespace}/{ref.name}"
        try:
            stored = self.kube.read_secret_key(namespace, ref.name, ref.key)
            token = _clean_token(stored.text)
        except KubeError as error:
            raise TokenUnavailable(f"cannot read the Prometheus token: {TOKEN_FIELD}: {error}") from None
        except ValueError as error:
            raise TokenUnavailable(
                f"cannot read the Prometheus token: {TOKEN_FIELD}: {secret} key {ref.key}: {error}"
            ) from None
        allowed = allowed_addresses(stored.annotations.get(ALLOWED_ADDRESSES_ANNOTATION))
        if not token_may_go(address, (*allowed, *self.token_allowlist)):
            raise TokenUnavailable(
                f"{TOKEN_FIELD}: the token of {secret} is not sent to {address}: add it to the "
                f"Secret's annotation {ALLOWED_ADDRESSES_ANNOTATION} (or to the operator's allowlist, "
                f"${TOKEN_ADDRESSES_ENV})"
            )
        return token


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
        headers = None if bearer_token is None else {"Authorization": f"Bearer {_clean_token(bearer_token)}"}
        # Idle connections kept per Prometheus: more than the operator's tick threads, so that no
        # query opens a connection that the pool then drops (requests keeps 10 by default).
        session = checked_session(egress, self.address, _NO_RETRIES, _CONNECTIONS)
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
        except AddressRefused as refused:  # the address a connection reached
            return _Failed(f"{ADDRESS_FIELD}: refused: Prometheus at {self.address} {refused}")
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
            log.warning("exemplars could not be read", query=promql, error=_truncate(str(error)))
            return []

    def is_online(self) -> bool:
        # A real query exercises the same endpoint, auth and proxies as the analysis does; `/-/ready`
        # does not exist behind path-prefixed API gateways (Mimir, Cortex), and `/` answers for any
        # web server at that address.
        return self.query("vector(1)").value == 1.0

    def close(self) -> None:
        self._client.close()


@dataclass(frozen=True)
class _Failed:
    error: str
    unreachable: bool = False


class _Budgeted:
    """One evaluation's queries within its deadline. Once Prometheus could not be reached, or the
    deadline passed, the remaining queries fail at once with that error rather than each waiting
    their timeout again."""

    def __init__(self, client: PrometheusClient, deadline: Deadline) -> None:
        self.client, self.deadline = client, deadline
        self.failed: str | None = None

    def query(self, promql: str) -> QueryResult:
        remaining = self.deadline.remaining()
        if self.failed is None and remaining <= 0:
            self.failed = self._past_deadline()
        if self.failed is not None:
            return QueryResult(error=self.failed)
        result, unreachable = self.client.query_within(promql, min(self.client.timeout, remaining))
        if self.deadline.passed:  # shut down mid-answer: a connection error that is not one
            result, unreachable = QueryResult(error=self._past_deadline()), True
        if unreachable:
            self.failed = result.error
        return result

    def _past_deadline(self) -> str:
        return (
            f"Prometheus at {self.client.address} did not answer the queries of one evaluation "
            f"within {self.deadline.seconds:g}s"
        )


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


def _clean_token(token: str) -> str:
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
    """The innermost reason ("Connection refused") instead of requests' nested retry wrapper text."""
    while (reason := exc.__cause__ or exc.__context__) is not None:
        exc = reason
    return _truncate(str(exc))


def _truncate(text: str) -> str:
    return clip(text, _MAX_DETAIL)


def _shape(value: object) -> str:
    """What a JSON value is, without its content (which a tenant's address may have chosen)."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return f"a list of {len(value)}"
    return f"a JSON {type(value).__name__}"
