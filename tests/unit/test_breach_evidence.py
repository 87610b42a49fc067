"""A breach's evidence: trace IDs from Prometheus exemplars and the metric per pod, ranked worst first,
folded into rollbackReason and the RolledBack Event; without exemplars nothing breaks."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest
from kubernetes import client
from rich.console import Console

from modelgate.api import BreachTrace, ModelRolloutStatus, Phase, PodValue, RollbackReason, parse_spec
from modelgate.api.addresses import EgressPolicy
from modelgate.cli.render.rollout import render_status
from modelgate.core import Event, Reason
from modelgate.core.notifying import with_evidence
from modelgate.kube import Kube
from modelgate.metrics import BreachExplainer
from modelgate.metrics.context import QueryContext
from modelgate.metrics.exemplars import parse_exemplars, worst_pods, worst_traces
from modelgate.metrics.presets import exemplar_query, preset_query
from modelgate.metrics.prometheus import PrometheusProvider
from modelgate.metrics.prometheus_http import PrometheusClient
from testbed.manifests import model_rollout

pytestmark = pytest.mark.usefixtures("loopback_allowed")  # the fake Prometheus is on 127.0.0.1

AT = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
CTX = QueryContext.for_rollout("serving", "chat-v1", "chat-v2", "30s")
BAD_POD, GOOD_POD = "chat-v2-7d9f8b6c5-abcde", "chat-v2-7d9f8b6c5-fghij"


def exemplars_answer(*exemplars: tuple[str, str, str, float]) -> dict[str, object]:
    """(pod, trace id label, trace id, value) each, as /api/v1/query_exemplars answers."""
    return {
        "status": "success",
        "data": [
            {
                "seriesLabels": {"__name__": "http_requests_total", "pod": pod, "status": "500"},
                "exemplars": [{"labels": {label: trace}, "value": str(value), "timestamp": AT.timestamp()}],
            }
            for pod, label, trace, value in exemplars
        ],
    }


def test_exemplars_become_traces_with_their_pods() -> None:
    answer = exemplars_answer((BAD_POD, "trace_id", "a" * 32, 1), (GOOD_POD, "span_id", "b" * 16, 1))
    answer["data"].append({"seriesLabels": {}, "exemplars": [{"labels": {"traceID": "c" * 32}}]})  # type: ignore[attr-defined]
    assert parse_exemplars(answer["data"]) == [
        BreachTrace(trace_id="a" * 32, pod=BAD_POD, value=1.0, time=AT),
        BreachTrace(trace_id="c" * 32),  # no value or time, still a trace
    ]
    assert parse_exemplars("not a list") == [] and parse_exemplars([{"exemplars": ["junk"]}]) == []


def test_the_slowest_then_the_latest_requests_come_first_once_each() -> None:
    def trace(name: str, value: float, seconds: int) -> BreachTrace:
        return BreachTrace(trace_id=name, value=value, time=AT + timedelta(seconds=seconds))

    traces = [trace("old", 1, 0), trace("new", 1, 5), trace("slow", 8, 0), trace("new", 1, 9)]
    assert [t.trace_id for t in worst_traces(traces, kept=2)] == ["slow", "new"]


def test_pods_are_ranked_by_how_badly_they_stand() -> None:
    values = {GOOD_POD: 0.0, BAD_POD: 0.4, "idle": None}
    assert [p.pod for p in worst_pods(values, lower_is_worse=False)] == [BAD_POD, GOOD_POD, "idle"]
    assert [p.pod for p in worst_pods(values, lower_is_worse=True)] == [GOOD_POD, BAD_POD, "idle"]


def test_an_error_rates_exemplars_are_its_failed_requests_and_a_latencys_its_histogram() -> None:
    errors = exemplar_query("errorRate", "vllm", CTX)
    assert 'status=~"5.."' in errors and "/" not in errors
    assert exemplar_query("latencyP99", "vllm", CTX) == preset_query("latencyP99", "vllm", CTX)
    slow = exemplar_query("slowRequestRate", "vllm", CTX, threshold=2.5)
    assert slow.startswith("sum(vllm:e2e_request_latency_seconds_bucket{") and "le=" not in slow


ROLLED_BACK = Event(Reason.ROLLED_BACK, "MetricBreach: metric error-rate: 0.2 is above the maximum 0.01")


def rolled_back(reason: RollbackReason | None) -> ModelRolloutStatus:
    return ModelRolloutStatus(phase=Phase.ROLLED_BACK, rollback_reason=reason)


def test_evidence_is_recorded_in_the_rollback_reason_and_its_event() -> None:
    reason = RollbackReason(
        time=AT, message="metric error-rate: 0.2 is above the maximum 0.01", metric="error-rate"
    )
    traces = (BreachTrace(trace_id="a" * 32, pod=BAD_POD, value=1.0, time=AT),)
    pods = (PodValue(pod=BAD_POD, value=0.4), PodValue(pod=GOOD_POD, value=0.0))
    status, evidenced = with_evidence(rolled_back(reason), traces, pods)
    recorded = status.rollback_reason
    assert recorded is not None and (recorded.traces, recorded.pods) == (traces, pods)
    message = evidenced(ROLLED_BACK).message
    assert message.startswith("MetricBreach: ") and f"{BAD_POD} 0.4" in message and "a" * 32 in message
    assert ModelRolloutStatus.model_validate(status.to_patch()) == status
    status, evidenced = with_evidence(rolled_back(reason), (), ())
    assert (status, evidenced(ROLLED_BACK)) == (rolled_back(reason), ROLLED_BACK)


# -- against a Prometheus, with or without exemplars ---------------------------------------------
Answer = Callable[[str, dict[str, list[str]]], tuple[int, object]]


@pytest.fixture
def prometheus(request: pytest.FixtureRequest) -> Iterator[str]:
    """A fake Prometheus answering each path with `request.param(path, params)`."""
    answer: Answer = request.param

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            url = urlparse(self.path)
            status, body = answer(url.path, parse_qs(url.query))
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def value_by_pod(query: str) -> tuple[int, object]:
    value = "0.4" if BAD_POD in query else "0" if GOOD_POD in query else "0.2"
    series = [{"metric": {}, "value": [AT.timestamp(), value]}]
    return 200, {"status": "success", "data": {"resultType": "vector", "result": series}}


def with_exemplars(path: str, params: dict[str, list[str]]) -> tuple[int, object]:
    if path == "/api/v1/query_exemplars":
        assert 'status=~"5.."' in params["query"][0]
        return 200, exemplars_answer((BAD_POD, "trace_id", "a" * 32, 1))
    return value_by_pod(params["query"][0])


def without_exemplar_storage(path: str, params: dict[str, list[str]]) -> tuple[int, object]:
    if path == "/api/v1/query_exemplars":  # an older Prometheus, or a backend without the API
        return 404, {"status": "error", "error": "404 page not found"}
    return value_by_pod(params["query"][0])


class TwoPods(Kube):
    def __init__(self) -> None:
        super().__init__(client.ApiClient())

    def deployment_pods(self, namespace: str, name: str) -> list[str]:
        return [GOOD_POD, BAD_POD]


def explain(address: str) -> tuple[tuple[BreachTrace, ...], tuple[PodValue, ...]]:
    error_rate = {"name": "error-rate", "preset": "errorRate", "max": 0.01}
    manifest = model_rollout(
        "chat", "serving", steps=[{"setWeight": 50}], prometheus=address, metrics=[error_rate]
    )
    spec = parse_spec(manifest["spec"])
    provider: BreachExplainer = PrometheusProvider(TwoPods(), EgressPolicy(allow_loopback=True))
    reason = RollbackReason(time=AT, message="breach", metric="error-rate")
    evidence = provider.explain(spec, "serving", reason)
    return evidence.traces, evidence.pods


@pytest.mark.parametrize("prometheus", [with_exemplars], indirect=True)
def test_a_breach_is_explained_by_its_requests_and_pods(prometheus: str) -> None:
    traces, pods = explain(prometheus)
    assert [(t.trace_id, t.pod) for t in traces] == [("a" * 32, BAD_POD)]
    assert [(p.pod, p.value) for p in pods] == [(BAD_POD, 0.4), (GOOD_POD, 0.0)]


@pytest.mark.parametrize("prometheus", [without_exemplar_storage], indirect=True)
def test_without_exemplars_the_traces_stay_empty_and_the_pods_are_still_there(prometheus: str) -> None:
    traces, pods = explain(prometheus)
    assert traces == () and [p.pod for p in pods] == [BAD_POD, GOOD_POD]
    assert PrometheusClient(prometheus).query_exemplars("up", AT, AT) == []


def test_modelgate_status_shows_the_pods_and_the_traces() -> None:
    reason = RollbackReason(
        time=AT,
        message="metric error-rate: 0.2 is above the maximum 0.01",
        metric="error-rate",
        traces=(BreachTrace(trace_id="a" * 32, pod=BAD_POD, value=1.0, time=AT),),
        pods=(PodValue(pod=BAD_POD, value=0.4), PodValue(pod=GOOD_POD, value=0.0)),
    )
    body = {
        "metadata": {"namespace": "serving", "name": "chat"},
        "spec": {"incumbent": {"deployment": "chat-v1"}, "candidate": {"deployment": "chat-v2"}, "steps": []},
        "status": ModelRolloutStatus(phase=Phase.ROLLED_BACK, rollback_reason=reason).to_patch(),
    }
    console = Console(width=200, record=True)
    console.print(render_status(body))
    lines = console.export_text().splitlines()
    pod_rows = [line for line in lines if line.strip("│ ").startswith("chat-v2-")]
    cells = [[cell.strip() for cell in row.split("│") if cell.strip()] for row in pod_rows]
    assert cells == [[BAD_POD, "0.4"], [GOOD_POD, "0"]]
    assert any("a" * 32 in line and BAD_POD in line for line in lines)
