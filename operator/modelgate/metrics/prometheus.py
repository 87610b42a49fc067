"""The Prometheus metric provider (and API-compatible backends: Thanos, Mimir, ...): PromQL from the
presets and user templates, run as instant queries over the HTTP API."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlparse

import requests
import structlog
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException
from urllib3.util.retry import Retry

from modelgate.api import BreachTrace, MetricSpec, ModelRolloutSpec, PodValue, RollbackReason, WorkloadRef
from modelgate.api.duration import parse_duration
from modelgate.api.fields import MAX_QUERY_TIMEOUT
from modelgate.core import AnalysisRun, QueryResult
from modelgate.core.limits import clip
from modelgate.kube import Kube, KubeError
from modelgate.metrics.base import AnalysisPlan, BreachEvidence, run_plan
from modelgate.metrics.context import Side
from modelgate.metrics.deadline import Deadline, WatchedAdapter
from modelgate.metrics.exemplars import PODS_KEPT, parse_exemplars, pod_regex, worst_pods, worst_traces
from modelgate.metrics.promql_plan import analysis_plan
from modelgate.metrics.recorded import RecordedSeries
from modelgate.observability import METRIC_QUERIES, METRIC_QUERY_SECONDS

# The library's default retries (3, with backoff, also on HTTP 5xx) would stretch one query far
# beyond `timeout`; the engine retries on its next tick and counts consecutive errors instead.
# `read=False`, as in requests' own default, keeps a read timeout a `requests.Timeout` (with
# `read=0` urllib3 wraps it and requests reports a ConnectionError).
_NO_RETRIES = Retry(total=0, read=False)
# PrometheusApiClientException carries only "HTTP Status Code <n> (<repr of the body bytes>)".
_HTTP_ERROR = re.compile(r"HTTP Status Code (\d+) \((b'.*'|b\".*\")\)", re.DOTALL)
_MAX_DETAIL = 300
_CONNECTIONS = 256
# The queries of one evaluation (and the evidence of one breach) share this deadline, so that one
# tick holds an operator thread no longer than this, however its Prometheus answers.
EVALUATION_DEADLINE = parse_duration(MAX_QUERY_TIMEOUT).total_seconds()
log = structlog.get_logger("modelgate.metrics.prometheus")


class PrometheusProvider:
    """MetricProvider: one client per Prometheus address, timeout and bearer token, kept across ticks."""

    def __init__(self, kube: Kube) -> None:
        self.kube = kube
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
        except (KubeError, ValueError) as error:  # an unreadable Secret, or a malformed token
            # Like an unreachable Prometheus: held, then paused or rolled back per the spec's policy.
            queries = {name: metric.candidate for name, metric in plan.metrics.items()}
            field = "spec.analysis.prometheus.bearerTokenSecretRef"
            return AnalysisRun.failed(queries, at, f"cannot read the Prometheus token: {field}: {error}")
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
        with its timeout and bearer token."""
        prometheus = plan.analysis.prometheus
        token = None
        if prometheus.bearer_token_secret_ref is not None:
            ref = prometheus.bearer_token_secret_ref
            try:
                token = _clean_token(self.kube.read_secret_key(plan.namespace, ref.name, ref.key))
            except ValueError as error:  # names the Secret key, never the token
                raise ValueError(f"Secret {plan.namespace}/{ref.name} key {ref.key}: {error}") from None
        key = (address or prometheus.address, prometheus.timeout_timedelta.total_seconds(), token)
        if key not in self._clients:
            self._clients[key] = PrometheusClient(key[0], timeout=key[1], bearer_token=token)
        return self._clients[key]


class PrometheusClient:
    """Instant queries against one Prometheus.

    `timeout` bounds connecting and each wait for response data, so a call that gets no answer
    returns an error after about `timeout` seconds.
    """

    def __init__(self, address: str, timeout: float = 5.0, bearer_token: str | None = None) -> None:
        parsed = urlparse(address)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError(f"Prometheus address {address!r} must be an http:// or https:// URL")
        if timeout <= 0:
            raise ValueError(f"Prometheus timeout must be positive, got {timeout}")
        self.address = address.rstrip("/")
        self.timeout = timeout
        headers = None if bearer_token is None else {"Authorization": f"Bearer {_clean_token(bearer_token)}"}
        # Idle connections kept per Prometheus: more than the operator's tick threads, so that no
        # query opens a connection that the pool then drops (requests keeps 10 by default).
        session = requests.Session()
        session.mount(f"{self.address}/", WatchedAdapter(max_retries=_NO_RETRIES, pool_maxsize=_CONNECTIONS))
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
        except requests.Timeout:  # before ConnectionError: ConnectTimeout is both
            seconds = self.timeout if timeout is None else timeout
            return _Failed(
                f"Prometheus at {self.address} did not answer within {seconds:g}s", unreachable=True
            )
        except requests.ConnectionError as exc:
            return _Failed(
                f"cannot connect to Prometheus at {self.address}: {_root_cause(exc)}", unreachable=True
            )
        except PrometheusApiClientException as exc:
            return _Failed(f"Prometheus at {self.address} {_describe_http_error(str(exc))}")
        except (requests.RequestException, ValueError, KeyError, TypeError) as exc:
            # ValueError includes a body that is not JSON (e.g. a proxy's HTML page); Key/TypeError
            # a JSON body without `data.result`.
            return _Failed(f"unexpected response from Prometheus at {self.address}: {_truncate(repr(exc))}")

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
        return RecordedSeries(step=step, error=f"unexpected range query result: {_truncate(repr(result))}")
    if len(result) > 1:
        return RecordedSeries(
            step=step, error=f"query returned {len(result)} series; a metric query must return one"
        )
    try:
        points = tuple((float(t), float(v)) for t, v in result[0]["values"]) if result else ()
    except (TypeError, ValueError):
        return RecordedSeries(
            step=step, error=f"unexpected samples in range query result: {_truncate(repr(result))}"
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
        return QueryResult(error=f"unexpected query result: {_truncate(repr(result))}")
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
        return QueryResult(error=f"unexpected sample in query result: {_truncate(repr(sample))}")
    try:
        return QueryResult(value=float(sample[1]), sample_count=sample_count)
    except ValueError:
        return QueryResult(error=f"query returned a non-numeric value {_truncate(sample[1])!r}")


def _describe_http_error(message: str) -> str:
    """'answered HTTP 400 (bad_data): <PromQL error>' from the library's exception text."""
    match = _HTTP_ERROR.fullmatch(message)
    if match is None:
        return f"failed: {_truncate(message)}"
    status, body_repr = match.groups()
    body = ast.literal_eval(body_repr).decode("utf-8", errors="replace").strip()
    if not body:
        return f"answered HTTP {status}"
    try:
        payload = json.loads(body)
        detail = f"({payload['errorType']}): {payload['error']}"
    except (ValueError, TypeError, KeyError):  # not the API's error JSON, e.g. a proxy's page
        detail = body
    return f"answered HTTP {status} {_truncate(detail)}"


def _root_cause(exc: BaseException) -> str:
    """The innermost reason ("Connection refused") instead of requests' nested retry wrapper text."""
    while (reason := exc.__cause__ or exc.__context__) is not None:
        exc = reason
    return _truncate(str(exc))


def _truncate(text: str) -> str:
    return clip(text, _MAX_DETAIL)
