"""A stand-in for the endpoint picker in front of an InferencePool whose servers serve several LoRA
adapters: it follows one rule of llm-d's InferenceModelRewrite (llm-d.ai/v1alpha2, the group llm-d's
endpoint picker reads: it ignores the Inference Extension's removed inference.networking.x-k8s.io one
once llm-d's CRD is installed, as on the bed), rewrites the `model` of each request the rule matches
to a target chosen by the rule's weights, and forwards the request to the server of that target
(`upstreams`, else `default`).

The choice is a smooth weighted round robin (traffic_driver.py), so every cycle of sum(weights)
requests gives each target exactly its weight: a test can compare the split it routed with the
rule's weights. What it routed is counted per target (`routed`) and exported on /metrics under the
endpoint picker's series (`inference_objective_request_total` and `..._error_total` by `model_name`
and `target_model_name`), which presets with source llm-d read. It listens on 127.0.0.1 only and
forwards only to loopback URLs.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kubernetes.client import CustomObjectsApi

from testbed.ports import LOOPBACK
from testbed.traffic_driver import (
    HTTPRouteWatcher,
    RouteError,
    SmoothWeightedRoundRobin,
    Weights,
    require_loopback_url,
)

REWRITE_RESOURCE = ("llm-d.ai", "v1alpha2", "inferencemodelrewrites")
MAX_BODY = 1 << 20  # a chat request; anything larger is refused, never read
FORWARD_TIMEOUT = 10.0


def rule_targets(rewrite: Mapping[str, Any], rule_index: int) -> tuple[str, Weights]:
    """The model rule `rule_index` matches (its first Exact match) and its targets' weights (a
    target without one weighs 1, as when no target has one: an equal split)."""
    rules = (rewrite.get("spec") or {}).get("rules") or []
    if rule_index >= len(rules):
        raise RouteError(f"InferenceModelRewrite has {len(rules)} rule(s), not a rule {rule_index}")
    rule = rules[rule_index]
    matches = [m.get("model") or {} for m in rule.get("matches") or []]
    if not matches or not matches[0].get("value"):
        raise RouteError(f"rule {rule_index} matches no model")
    weights = {str(t["modelRewrite"]): int(t.get("weight", 1)) for t in rule.get("targets") or []}
    return str(matches[0]["value"]), weights


class EndpointPickerStandIn:
    """Serves on 127.0.0.1:`port` until `stop()`; the rule is followed from a watch thread."""

    def __init__(
        self,
        api: CustomObjectsApi,
        namespace: str,
        rewrite: str,
        *,
        default: str,
        upstreams: Mapping[str, str] | None = None,
        rule_index: int = 0,
        port: int = 0,
    ) -> None:
        self.default = require_loopback_url(default)
        self.upstreams = {model: require_loopback_url(url) for model, url in (upstreams or {}).items()}
        self._lock = threading.Lock()
        self._scheduler = SmoothWeightedRoundRobin()
        self._matched: str | None = None
        self._weights: Weights = {}
        self._requests: Counter[tuple[str, str]] = Counter()  # (model asked, target) -> requests
        self._picked: Counter[str] = Counter()  # target -> requests of the rule's match picked for it
        self._errors: Counter[tuple[str, str]] = Counter()
        self._watcher = HTTPRouteWatcher(
            api,
            namespace,
            rewrite,
            resource=REWRITE_RESOURCE,
            parse=lambda found: (self._parse(found, rule_index), {}),
        )
        self._server = ThreadingHTTPServer((LOOPBACK, port), _handler(self))
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self._server.server_address[1]}"

    def start(self) -> EndpointPickerStandIn:
        self._watcher.follow(lambda weights, _: self._set_weights(weights))
        threading.Thread(target=self.serve, name="endpoint picker", daemon=True).start()
        return self

    def serve(self) -> None:
        """Blocks until `stop()`; checks for it every 50 ms, so stopping is quick."""
        self._server.serve_forever(poll_interval=0.05)

    def stop(self) -> None:
        self._watcher.stop()
        self._server.shutdown()
        self._server.server_close()

    def weights(self) -> Weights:
        with self._lock:
            return dict(self._weights)

    def routed(self) -> Counter[str]:
        """Requests the rule's match sent to each target so far, counted when picked: a request still
        in flight when the weights change counts under the weights that picked it."""
        with self._lock:
            return Counter(self._picked)

    def _parse(self, rewrite: Mapping[str, Any], rule_index: int) -> Weights:
        matched, weights = rule_targets(rewrite, rule_index)
        with self._lock:
            self._matched = matched
        return weights

    def _set_weights(self, weights: Weights) -> None:
        with self._lock:
            if weights != self._weights:  # a re-list that changed nothing keeps the cycle going
                self._weights = dict(weights)
                self._scheduler.set_weights(weights)

    def route(self, body: dict[str, Any]) -> tuple[str, str] | None:
        """(the model asked for, the target it is rewritten to), or None when the rule matches but no
        target has weight; a model the rule does not match goes on as asked."""
        asked = str(body.get("model"))
        with self._lock:
            if asked != self._matched:
                return asked, asked
            target = self._scheduler.pick()
            if target is not None:
                self._picked[target] += 1
        return None if target is None else (asked, target)

    def record(self, asked: str, target: str, status: int) -> None:
        with self._lock:
            self._requests[(asked, target)] += 1
            if status != HTTPStatus.OK:
                self._errors[(asked, target)] += 1

    def forward(self, path: str, body: dict[str, Any], target: str) -> tuple[int, bytes]:
        url = self.upstreams.get(target, self.default) + path
        request = urllib.request.Request(
            url,
            data=json.dumps(body | {"model": target}).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=FORWARD_TIMEOUT) as response:
                return response.status, response.read()
        except urllib.error.HTTPError as error:
            return error.code, error.read()
        except (urllib.error.URLError, TimeoutError) as error:
            return HTTPStatus.BAD_GATEWAY, f"upstream {target}: {error}".encode()

    def exposition(self) -> str:
        with self._lock:
            series = [
                (name, key, count)
                for name, counts in (
                    ("inference_objective_request_total", self._requests),
                    ("inference_objective_request_error_total", self._errors),
                )
                for key, count in sorted(counts.items())
            ]
        lines = []
        for name in ("inference_objective_request_total", "inference_objective_request_error_total"):
            lines.append(f"# TYPE {name} counter")
            lines += [
                f'{name}{{model_name="{_label(asked)}",target_model_name="{_label(target)}"}} {count}'
                for found, (asked, target), count in series
                if found == name
            ]
        return "\n".join(lines) + "\n"


def _label(value: str) -> str:
    """A Prometheus label value as the text format escapes it (the model comes from a request)."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _handler(picker: EndpointPickerStandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path != "/metrics":
                self._answer(HTTPStatus.NOT_FOUND, b"only /metrics and POST requests")
                return
            self._answer(HTTPStatus.OK, picker.exposition().encode(), "text/plain; version=0.0.4")

        def do_POST(self) -> None:
            if not self.path.startswith("/v1/"):  # appended to an upstream URL: never another host
                self._answer(HTTPStatus.NOT_FOUND, b"only /v1/ paths")
                return
            length = int(self.headers.get("Content-Length") or 0)
            if not 0 < length <= MAX_BODY:
                self._answer(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, b"a JSON body of at most 1 MiB")
                return
            try:
                body = json.loads(self.rfile.read(length))
            except ValueError:
                body = None
            if not isinstance(body, dict):
                self._answer(HTTPStatus.BAD_REQUEST, b"the body is not a JSON object")
                return
            chosen = picker.route(body)
            if chosen is None:
                self._answer(HTTPStatus.SERVICE_UNAVAILABLE, b"no target of the rule has weight")
                return
            status, answer = picker.forward(self.path, body, chosen[1])
            picker.record(*chosen, status)
            self._answer(status, answer)

        def _answer(self, status: int, body: bytes, content_type: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: a test's log is not the place for each request."""

    return Handler
