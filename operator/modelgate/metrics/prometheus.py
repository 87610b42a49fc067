"""The Prometheus metric provider (and API-compatible backends: Thanos, Mimir).

The Prometheus metric provider (and API-compatible backends: Thanos, Mimir, ...): PromQL from the
presets and user templates, run as instant queries over the HTTP API."""

from __future__ import annotations

from datetime import datetime

import structlog

from modelgate.api import (
    AcceleratorSpec,
    MetricSpec,
    ModelRolloutSpec,
    PodValue,
    RollbackReason,
    WorkloadRef,
)
from modelgate.api.addresses import (
    ALLOWED_ADDRESSES_ANNOTATION,
    AddressRefused,
    EgressPolicy,
    allowed_addresses,
    token_may_go,
)
from modelgate.api.analysis import SecretKeyRef
from modelgate.api.duration import parse_duration
from modelgate.api.fields import MAX_QUERY_TIMEOUT
from modelgate.core import AnalysisRun, QueryResult
from modelgate.core.notifying import BreachEvidence
from modelgate.egress import TOKEN_ADDRESSES_ENV
from modelgate.kube import Kube, KubeError
from modelgate.metrics.context import Side
from modelgate.metrics.deadline import Deadline
from modelgate.metrics.exemplars import PODS_KEPT, pod_regex, worst_pods, worst_traces
from modelgate.metrics.prometheus_http import ADDRESS_FIELD, PrometheusClient, clean_token
from modelgate.metrics.promql_plan import analysis_plan, lists_pods, needs_accelerators
from modelgate.metrics.provider import AnalysisPlan, run_plan

TOKEN_FIELD = "spec.analysis.prometheus.bearerTokenSecretRef"
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

    def __init__(
        self, kube: Kube, egress: EgressPolicy | None = None, token_allowlist: tuple[str, ...] = ()
    ) -> None:
        self.kube = kube
        self.egress = egress or EgressPolicy()
        self.token_allowlist = token_allowlist
        self._clients: dict[tuple[str, float, str | None], PrometheusClient] = {}

    def plan(self, spec: ModelRolloutSpec, namespace: str) -> AnalysisPlan:
        # An InferencePool side's series are its Pods' (unless its podRegex says otherwise): listed
        # by the pool's selector each time, so Pods that come and go are followed; so are a
        # workload's whose kind does not fix its Pods' names.
        sides: tuple[tuple[Side, WorkloadRef], ...] = (
            ("incumbent", spec.incumbent),
            ("candidate", spec.candidate),
        )
        pool_pods = {
            side: self.kube.side_serving_pods(namespace, ref) for side, ref in sides if lists_pods(ref)
        }
        # Each pool side's endpoint picker, whose series (source llm-d) carry its Service's name.
        pickers = {
            side: self.kube.pool_endpoint_picker(namespace, ref.name)
            for side, ref in sides
            if ref.inference_pool is not None
        }
        requested = self._requested(spec, namespace, sides)
        return analysis_plan(
            spec, namespace, pool_pods, requested, pickers, self._member_pods(spec, namespace)
        )

    def _member_pods(self, spec: ModelRolloutSpec, namespace: str) -> dict[tuple[Side, str], list[str]]:
        """The Pods of each group member a metric names by role, where they are not a Deployment's
        (whose Pods are named after it) and its podRegex is not set."""
        assert spec.analysis is not None
        roles = {metric.role for metric in spec.analysis.metrics if metric.role is not None}
        sides: tuple[tuple[Side, WorkloadRef], ...] = (
            ("incumbent", spec.incumbent),
            ("candidate", spec.candidate),
        )
        return {
            (side, member.role): self.kube.member_pods(namespace, member)
            for side, ref in sides
            for member in ref.members or ()
            if member.role in roles and member.kind != "Deployment" and member.pod_regex is None
        }

    def _requested(
        self, spec: ModelRolloutSpec, namespace: str, sides: tuple[tuple[Side, WorkloadRef], ...]
    ) -> dict[Side, float]:
        """What each side's Ready Pods request of the accelerator resource, for the sides whose count
        the spec does not set, when a metric is per accelerator (else nothing is read)."""
        analysis = spec.analysis
        assert analysis is not None
        if not needs_accelerators(analysis):
            return {}
        accelerators = analysis.accelerators or AcceleratorSpec()
        counts = {"incumbent": accelerators.incumbent.count, "candidate": accelerators.candidate.count}
        return {
            side: self.kube.side_accelerators(namespace, ref, accelerators.resource_name)
            for side, ref in sides
            if counts[side] is None
        }

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
        for pod in self._candidate_pods(spec, namespace, metric.role)[:PODS_KEPT]:
            alone = _narrowed(spec.candidate, metric.role, pod)
            pod_query = self.plan(spec.model_copy(update={"candidate": alone}), namespace).metrics[
                metric.name
            ]
            if pod_query.candidate == query:
                return ()
            values[pod] = client.query(pod_query.candidate).value
        return worst_pods(values, lower_is_worse=metric.max is None and metric.min is not None)

    def _candidate_pods(self, spec: ModelRolloutSpec, namespace: str, role: str | None) -> list[str]:
        """The candidate's Pods, or its `role` member's when the metric names one."""
        candidate = spec.candidate
        member = next((m for m in candidate.members or () if m.role == role), None)
        if member is not None:
            return self.kube.member_pods(namespace, member)
        if candidate.is_deployment:
            return self.kube.deployment_pods(namespace, candidate.name)
        # A pool's selected Pods, a LeaderWorkerSet's leaders: the Pods that serve.
        return sorted(pod.name for pod in self.kube.side_serving_pods(namespace, candidate) or [])

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
            token = clean_token(stored.text)
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


def _narrowed(candidate: WorkloadRef, role: str | None, pod: str) -> WorkloadRef:
    """The candidate with the series of one Pod: its own podRegex, or its `role` member's."""
    if role is None:
        return candidate.model_copy(update={"pod_regex": pod_regex(pod)})
    members = tuple(
        member.model_copy(update={"pod_regex": pod_regex(pod)}) if member.role == role else member
        for member in candidate.members or ()
    )
    return candidate.model_copy(update={"members": members})
