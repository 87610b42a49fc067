"""The spec and status models: the contract's example parses, its invalid cases are rejected with
messages naming the field, durations parse, and status survives a trip through the API's JSON."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from modelgate.api import (
    AnalysisSample,
    CommandResult,
    Condition,
    ConditionStatus,
    InvalidSpecError,
    LastCommand,
    MetricAnalysis,
    ModelRolloutSpec,
    ModelRolloutStatus,
    Phase,
    RollbackReason,
    Verdict,
    parse_duration,
    parse_spec,
)
from tests.support.bad_rollouts import drop, put

# The example of the API contract (design/modelrollout-v1alpha1.md), verbatim.
CONTRACT_EXAMPLE = """
apiVersion: modelgate.io/v1alpha1
kind: ModelRollout
metadata: {name: chat, namespace: serving}
spec:
  incumbent: {deployment: chat-v1}          # required; the model serving today
  candidate: {deployment: chat-v2}          # required; must differ from incumbent
  trafficRouting:                           # exactly one router key
    gatewayAPI:
      httpRoute: chat                       # required
      ruleIndex: 0                          # which rule of the route holds the two backends (default 0)
      incumbentBackend: chat-v1             # backendRef name (a Service) of the incumbent
      candidateBackend: chat-v2             # backendRef name of the candidate
  steps:                                    # 1..50 items, each exactly one of:
    - setWeight: 10                         #   candidate weight 0..100
    - pause: {duration: 2m}                 #   timed pause (Go-style duration: 30s, 5m, 1h)
    - pause: {}                             #   indefinite: waits for `modelgate promote`
    - setWeight: 100
  analysis:
    interval: 30s                           # how often metrics are evaluated
    minRequests: 50                         # fewer candidate requests in a window -> Inconclusive
    prometheus:
      address: http://prometheus.monitoring:9090
      timeout: 5s
      bearerTokenSecretRef: {name: prom-token, key: token}   # optional
    metrics:                                # each: preset or query, and max and/or min
      - {name: error-rate,   preset: errorRate,   max: 0.01}
      - {name: p99-latency,  preset: latencyP99,  max: 2.5}  # seconds
      - {name: refusal-rate, preset: refusalRate, max: 0.05}
      - name: queue-depth
        query: 'max(vllm:num_requests_waiting{pod=~"{{ candidate.podRegex }}"})'
        max: 20
        failureLimit: 1                     # breaches tolerated before rollback (default 0)
  rollback:
    onPrometheusError: pause                # pause | rollback
    maxConsecutiveErrors: 3
"""

MINIMAL_SPEC: dict[str, Any] = {
    "incumbent": {"deployment": "chat-v1"},
    "candidate": {"deployment": "chat-v2"},
    "trafficRouting": {
        "gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "chat-v1", "candidateBackend": "chat-v2"}
    },
    "steps": [{"setWeight": 100}],
}


def contract_spec() -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load(CONTRACT_EXAMPLE)["spec"]
    return spec


def test_contract_example_parses() -> None:
    spec = parse_spec(contract_spec())

    assert spec.incumbent.deployment == "chat-v1"
    assert spec.candidate.deployment == "chat-v2"
    assert spec.candidate.pod_regex is None
    assert spec.traffic_routing.router_key == "gatewayAPI"
    route = spec.traffic_routing.gateway_api
    assert route is not None
    assert (route.http_route, route.rule_index, route.candidate_backend) == ("chat", 0, "chat-v2")
    assert [step.set_weight for step in spec.steps] == [10, None, None, 100]
    pauses = [step.pause.duration_timedelta for step in spec.steps if step.pause is not None]
    assert pauses == [timedelta(minutes=2), None]
    analysis = spec.analysis
    assert analysis is not None
    assert analysis.interval_timedelta == timedelta(seconds=30)
    assert analysis.prometheus.timeout_timedelta == timedelta(seconds=5)
    assert analysis.prometheus.bearer_token_secret_ref is not None
    assert analysis.prometheus.bearer_token_secret_ref.key == "token"
    assert [(m.name, m.preset, m.max, m.failure_limit) for m in analysis.metrics] == [
        ("error-rate", "errorRate", 0.01, 0),
        ("p99-latency", "latencyP99", 2.5, 0),
        ("refusal-rate", "refusalRate", 0.05, 0),
        ("queue-depth", None, 20, 1),
    ]
    assert analysis.metrics[3].query == 'max(vllm:num_requests_waiting{pod=~"{{ candidate.podRegex }}"})'
    assert (spec.rollback.on_prometheus_error, spec.rollback.max_consecutive_errors) == ("pause", 3)


def test_spec_round_trips_through_its_camel_case_form() -> None:
    spec = parse_spec(contract_spec())
    assert parse_spec(spec.model_dump(by_alias=True, exclude_none=True, mode="json")) == spec


def test_defaults_match_the_crd() -> None:
    spec = parse_spec(
        MINIMAL_SPEC
        | {
            "analysis": {
                "prometheus": {"address": "http://prometheus:9090"},
                "metrics": [{"name": "error-rate", "preset": "errorRate", "max": 0.01}],
            }
        }
    )
    assert spec.traffic_routing.gateway_api is not None
    assert spec.traffic_routing.gateway_api.route_refs[0].rule_index == 0
    assert spec.analysis is not None
    assert (spec.analysis.interval, spec.analysis.min_requests, spec.analysis.prometheus.timeout) == (
        "30s",
        50,
        "5s",
    )
    assert spec.analysis.metrics[0].failure_limit == 0
    assert (spec.rollback.on_prometheus_error, spec.rollback.max_consecutive_errors) == ("pause", 3)


def test_analysis_is_optional() -> None:
    assert parse_spec(MINIMAL_SPEC).analysis is None


def test_models_are_frozen() -> None:
    spec = parse_spec(MINIMAL_SPEC)
    with pytest.raises(ValidationError):
        spec.steps = ()  # type: ignore[misc]


def test_models_accept_python_names() -> None:
    spec = ModelRolloutSpec.model_validate(MINIMAL_SPEC)
    assert (
        ModelRolloutSpec(
            incumbent=spec.incumbent,
            candidate=spec.candidate,
            traffic_routing=spec.traffic_routing,
            steps=spec.steps,
        )
        == spec
    )


INVALID_SPECS = {
    # The contract's list of invalid specs.
    "weight 150": (
        put("steps.0.setWeight", 150),
        "spec.steps[0].setWeight: must be less than or equal to 100 (got 150)",
    ),
    "no steps": (put("steps", []), "spec.steps: must have at least 1 item"),
    "step with two kinds": (
        put("steps.0", {"setWeight": 10, "pause": {}}),
        "spec.steps[0]: set exactly one of setWeight, pause or mirror",
    ),
    "unknown preset": (
        put("analysis.metrics.0.preset", "successRate"),
        "spec.analysis.metrics[0].preset: must be 'errorRate', 'abortRate', 'refusalRate'",
    ),
    "metric with neither max nor min": (
        drop("analysis.metrics.0.max"),
        "spec.analysis.metrics[0]: metric error-rate: set max, min, compare or sequential",
    ),
    "candidate == incumbent": (
        put("candidate.deployment", "chat-v1"),
        "spec.candidate.deployment: must differ from spec.incumbent.deployment (both are chat-v1)",
    ),
    "malformed pause duration": (
        put("steps.1.pause.duration", "2 minutes"),
        'spec.steps[1].pause.duration: "2 minutes" is not a duration',
    ),
    # The other CEL rules and schema constraints of the CRD.
    "steps missing": (drop("steps"), "spec.steps: is required unless spec.policyRef"),
    "too many steps": (put("steps", [{"setWeight": 1}] * 51), "spec.steps: must have at most 50 items"),
    "step of neither kind": (
        put("steps.0", {}),
        "spec.steps[0]: set exactly one of setWeight, pause or mirror",
    ),
    "mirror and pause": (
        put("steps.0", {"mirror": {"percent": 5, "duration": "1m"}, "pause": {}}),
        "spec.steps[0]: set exactly one of setWeight, pause or mirror",
    ),
    "mirror of 0%": (
        put("steps.0", {"mirror": {"percent": 0, "duration": "1m"}}),
        "spec.steps[0].mirror.percent: must be greater than or equal to 1",
    ),
    "negative weight": (put("steps.0.setWeight", -1), "spec.steps[0].setWeight: must be greater than"),
    "malformed interval": (put("analysis.interval", "30"), 'spec.analysis.interval: "30" is not a duration'),
    "zero interval": (put("analysis.interval", "0s"), "spec.analysis.interval: must be at least 1s"),
    "malformed timeout": (
        put("analysis.prometheus.timeout", "5sec"),
        'spec.analysis.prometheus.timeout: "5sec" is not a duration',
    ),
    "no router": (put("trafficRouting", {}), "spec.trafficRouting: exactly one router must be set"),
    "unknown router": (put("trafficRouting.linkerd", {}), "spec.trafficRouting.linkerd: unknown field"),
    "same backends": (
        put("trafficRouting.gatewayAPI.candidateBackend", "chat-v1"),
        "spec.trafficRouting.gatewayAPI.candidateBackend: must differ from incumbentBackend",
    ),
    "negative rule index": (
        put("trafficRouting.gatewayAPI.ruleIndex", -1),
        "spec.trafficRouting.gatewayAPI.ruleIndex: must be greater than or equal to 0",
    ),
    "http route missing": (
        drop("trafficRouting.gatewayAPI.httpRoute"),
        "spec.trafficRouting.gatewayAPI: set exactly one of httpRoute, grpcRoute or routes",
    ),
    "preset and query": (
        put("analysis.metrics.0.query", "up"),
        "spec.analysis.metrics[0]: metric error-rate: set exactly one of preset or query",
    ),
    "min above max": (
        put("analysis.metrics.0.min", 0.5),
        "spec.analysis.metrics[0].min: metric error-rate: min must not be greater than max",
    ),
    "duplicate metric names": (
        put("analysis.metrics.1.name", "error-rate"),
        "spec.analysis.metrics[1].name: duplicate metric name error-rate",
    ),
    "metric name not a label": (
        put("analysis.metrics.0.name", "Error_Rate"),
        "spec.analysis.metrics[0].name: must be a lowercase RFC 1123 label",
    ),
    "negative failure limit": (
        put("analysis.metrics.3.failureLimit", -1),
        "spec.analysis.metrics[3].failureLimit: must be greater than or equal to 0",
    ),
    "deployment name not RFC 1123": (
        put("candidate.deployment", "Chat_V2"),
        "spec.candidate.deployment: must be a lowercase RFC 1123 name",
    ),
    "pod regex with a quote": (
        put("candidate.podRegex", 'chat-v2-.*"} or up{'),
        "spec.candidate.podRegex: must be a regular expression without quotes, braces",
    ),
    "pod regex that does not compile": (
        put("incumbent.podRegex", "chat-v1-(.*"),
        "spec.incumbent.podRegex: must be a valid regular expression (missing )",
    ),
    "model name with a quote": (
        put("candidate.model", 'llama"} or up{'),
        "spec.candidate.model: must consist of letters, digits, '.', '_', ':', '/' and '-'",
    ),
    "address not a URL": (
        put("analysis.prometheus.address", "prometheus:9090"),
        "spec.analysis.prometheus.address: must be an http:// or https:// URL",
    ),
    "secret key with a slash": (
        put("analysis.prometheus.bearerTokenSecretRef.key", "a/b"),
        "spec.analysis.prometheus.bearerTokenSecretRef.key: must consist of letters",
    ),
    "unknown prometheus error policy": (
        put("rollback.onPrometheusError", "ignore"),
        "spec.rollback.onPrometheusError: must be 'pause' or 'rollback'",
    ),
    "zero consecutive errors": (
        put("rollback.maxConsecutiveErrors", 0),
        "spec.rollback.maxConsecutiveErrors: must be greater than or equal to 1",
    ),
    "misspelt field": (
        put("rollback.maxConsecutiveError", 2),
        "spec.rollback.maxConsecutiveError: unknown field",
    ),
}


@pytest.mark.parametrize(("edit", "expected"), INVALID_SPECS.values(), ids=INVALID_SPECS.keys())
def test_invalid_spec_is_rejected_naming_the_field(
    edit: Callable[[dict[str, Any]], None], expected: str
) -> None:
    spec = contract_spec()
    edit(spec)
    with pytest.raises(InvalidSpecError) as caught:
        parse_spec(spec)
    assert any(problem.startswith(expected) for problem in caught.value.problems), caught.value.problems


def test_every_problem_is_reported_at_once() -> None:
    spec = copy.deepcopy(MINIMAL_SPEC)
    spec["steps"] = [{"setWeight": 150}, {"pause": {"duration": "soon"}}]
    with pytest.raises(InvalidSpecError) as caught:
        parse_spec(spec)
    assert [problem.split(":")[0] for problem in caught.value.problems] == [
        "spec.steps[0].setWeight",
        "spec.steps[1].pause.duration",
    ]
    assert "spec.steps[1].pause.duration" in str(caught.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30s", timedelta(seconds=30)),
        ("5m", timedelta(minutes=5)),
        ("1h", timedelta(hours=1)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("500ms", timedelta(milliseconds=500)),
        ("1.5h", timedelta(minutes=90)),
        ("2h45m30.5s", timedelta(hours=2, minutes=45, seconds=30.5)),
        ("1m1ms", timedelta(minutes=1, milliseconds=1)),
        ("0s", timedelta()),
        ("876000h", timedelta(hours=876000)),
    ],
)
def test_durations_parse(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "30",
        "5 m",
        "-5s",
        "1d",
        "1h-30m",
        "s",
        ".5s",
        "5s ",
        "1H",
        "99999999999h",
        "1000000000h",
        "876000h1ms",
    ],
)
def test_malformed_durations_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match=r"is not a duration|must be at most 876000h"):
        parse_duration(text)


T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def full_status() -> ModelRolloutStatus:
    sample = AnalysisSample(time=T0, value=0.034, verdict=Verdict.FAIL)
    return ModelRolloutStatus(
        phase=Phase.ROLLED_BACK,
        message="rolled back: error-rate 0.034 > max 0.01",
        observed_generation=3,
        rollout_candidate="chat-v2",
        last_command=LastCommand(
            id="c0ffee", name="abort", result=CommandResult.APPLIED, message="rolled back", time=T0
        ),
        live_weight=0,
        current_step_index=2,
        current_weight=0,
        step_started_at=T0 - timedelta(minutes=2),
        last_analysis_at=T0,
        consecutive_prometheus_errors=0,
        analysis=(
            MetricAnalysis(
                name="error-rate",
                verdict=Verdict.FAIL,
                time=T0,
                value=0.034,
                query="sum(rate(x[1m]))",
                failures=1,
                history=(AnalysisSample(time=T0, value=None, verdict=Verdict.INCONCLUSIVE), sample),
            ),
            MetricAnalysis(name="p99-latency", verdict=Verdict.ERROR, time=T0, message="connection refused"),
        ),
        rollback_reason=RollbackReason(
            time=T0, message="error-rate 0.034 > max 0.01", metric="error-rate", value=0.034, threshold=0.01
        ),
        conditions=(
            Condition(
                type="Progressing",
                status=ConditionStatus.FALSE,
                reason="RolledBack",
                message="error-rate failed",
                last_transition_time=T0,
                observed_generation=3,
            ),
        ),
    )


def test_status_round_trips_through_its_patch() -> None:
    status = full_status()
    patch = status.to_patch()
    assert ModelRolloutStatus.model_validate(patch) == status
    assert patch["phase"] == "RolledBack"
    assert patch["stepStartedAt"] == "2026-05-01T11:58:00Z"
    assert patch["analysis"][0]["history"][0] == {
        "time": "2026-05-01T12:00:00Z",
        "value": None,
        "verdict": "Inconclusive",
    }
    assert patch["conditions"][0]["lastTransitionTime"] == "2026-05-01T12:00:00Z"


def test_patch_clears_fields_the_status_no_longer_has() -> None:
    retried = full_status().model_copy(update={"phase": Phase.PROGRESSING, "rollback_reason": None})
    patch = retried.to_patch()
    assert "rollbackReason" in patch
    assert patch["rollbackReason"] is None


def test_status_parses_what_the_api_server_returns() -> None:
    status = ModelRolloutStatus.model_validate(
        {"phase": "Progressing", "stepStartedAt": "2026-05-01T12:00:00.250000Z", "currentWeight": 10}
    )
    assert status.step_started_at == T0 + timedelta(milliseconds=250)
    assert (status.current_step_index, status.analysis, status.conditions) == (0, (), ())


def test_empty_status_has_the_crd_defaults() -> None:
    status = ModelRolloutStatus.model_validate({})
    assert status.phase is None
    assert (status.current_step_index, status.current_weight, status.consecutive_prometheus_errors) == (
        0,
        0,
        0,
    )


def test_timestamps_are_stored_in_utc() -> None:
    local = datetime(2026, 5, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    status = ModelRolloutStatus(step_started_at=local)
    assert status.step_started_at == T0
    assert status.to_patch()["stepStartedAt"] == "2026-05-01T12:00:00Z"


def test_naive_timestamps_are_rejected() -> None:
    with pytest.raises(ValidationError, match="must include a time zone"):
        ModelRolloutStatus(step_started_at=datetime(2026, 5, 1, 12, 0))


def test_status_values_must_be_finite() -> None:
    with pytest.raises(ValidationError):
        MetricAnalysis(name="error-rate", verdict=Verdict.INCONCLUSIVE, time=T0, value=float("nan"))
