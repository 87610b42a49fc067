"""The endpoint picker stand-in: the rule it reads, the split it routes (exact per cycle of the
weights), the rewritten `model` its upstream receives, and the series it exports."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import pytest
import requests
from kubernetes.client import CustomObjectsApi

from testbed.endpoint_picker import EndpointPickerStandIn, rule_targets
from testbed.inference_pools import model_rewrite
from testbed.traffic_driver import RouteError


class Echo(BaseHTTPRequestHandler):
    """Answers with the model it was asked for, or 503 for a model named `failing`."""

    def do_POST(self) -> None:
        model = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["model"]
        self.send_response(503 if model == "failing" else 200)
        self.end_headers()
        self.wfile.write(json.dumps({"model": model}).encode())

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def picker(upstream: str) -> Iterator[EndpointPickerStandIn]:
    """Serving, with the rule set by hand rather than followed from an API server."""
    stand_in = EndpointPickerStandIn(cast(CustomObjectsApi, None), "serving", "chat", default=upstream)
    stand_in._parse(model_rewrite("chat", "serving", "base", "chat", {"lora-a": 90, "lora-b": 10}), 0)
    threading.Thread(target=stand_in.serve, daemon=True).start()
    yield stand_in
    stand_in._server.shutdown()
    stand_in._server.server_close()


def ask(picker: EndpointPickerStandIn, model: str) -> requests.Response:
    return requests.post(
        f"{picker.url}/v1/chat/completions", json={"model": model, "messages": []}, timeout=5
    )


def test_reads_the_rules_match_and_target_weights() -> None:
    rewrite = model_rewrite("chat", "serving", "base", "chat", {"lora-a": 3, "lora-b": 1})
    assert rule_targets(rewrite, 0) == ("chat", {"lora-a": 3, "lora-b": 1})
    with pytest.raises(RouteError):
        rule_targets(rewrite, 1)


def test_routes_each_cycle_by_the_weights_and_rewrites_the_model(picker: EndpointPickerStandIn) -> None:
    picker._set_weights({"lora-a": 90, "lora-b": 10})
    answered = Counter(ask(picker, "chat").json()["model"] for _ in range(100))
    assert answered == {"lora-a": 90, "lora-b": 10}
    assert picker.routed() == answered
    picker._set_weights({"lora-b": 100})  # lora-a's target removed at 0
    assert {ask(picker, "chat").json()["model"] for _ in range(10)} == {"lora-b"}


def test_a_model_the_rule_does_not_match_goes_on_unchanged(picker: EndpointPickerStandIn) -> None:
    picker._set_weights({"lora-a": 1})
    assert ask(picker, "other").json() == {"model": "other"}
    assert picker.routed() == {}


def test_exports_requests_and_errors_per_target_model(picker: EndpointPickerStandIn) -> None:
    picker._set_weights({"failing": 1})
    assert ask(picker, "chat").status_code == 503
    metrics = requests.get(f"{picker.url}/metrics", timeout=5).text
    labels = '{model_name="chat",target_model_name="failing"}'
    assert f"inference_objective_request_total{labels} 1" in metrics
    assert f"inference_objective_request_error_total{labels} 1" in metrics


def test_refuses_what_it_would_not_forward(picker: EndpointPickerStandIn) -> None:
    assert requests.post(f"{picker.url}/v1/x", data=b"[1]", timeout=5).status_code == 400
    assert requests.post(f"{picker.url}/admin", json={"model": "chat"}, timeout=5).status_code == 404
    picker._set_weights({})
    assert ask(picker, "chat").status_code == 503
