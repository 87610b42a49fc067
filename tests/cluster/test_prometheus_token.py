"""A Prometheus that wants a bearer token: the rollout reads it from its Secret and succeeds; a
missing Secret, a malformed or a wrong token pauses it naming the Secret's field, until `resume`.
No token, right or wrong, ever shows in anything the operator puts out: its logs, its metrics, the
rollout (status and all), the Events, or what `modelgate status` and `modelgate history` print."""

from __future__ import annotations

import base64
import json
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes import client

from modelgate.api import ModelRolloutStatus, Phase
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.cli import modelgate
from tests.support.scenario import Scenario, serving

# Each token's random part, looked for in every output: found, it says which token leaked, even
# from an escaped or truncated copy of the whole.
SECRET_PARTS = {"right": uuid.uuid4().hex, "wrong": uuid.uuid4().hex, "malformed": uuid.uuid4().hex}
RIGHT = f"mgtoken-{SECRET_PARTS['right']}"
WRONG = f"mgtoken-{SECRET_PARTS['wrong']}"
MALFORMED = f"mgtoken-\u20ac-{SECRET_PARTS['malformed']}"  # not ASCII: http.client cannot send it


@pytest.fixture
def guarded_prometheus(local_bed: LocalCluster) -> Iterator[str]:
    """The bed's Prometheus behind a proxy on 127.0.0.1 that answers 401 without the right token."""
    upstream = local_bed.prometheus_url.rstrip("/")

    class Proxy(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.headers.get("Authorization") != f"Bearer {RIGHT}":
                self._answer(401, b"bearer token missing or wrong")
                return
            try:
                with urllib.request.urlopen(upstream + self.path, timeout=10) as response:
                    self._answer(response.status, response.read())
            except urllib.error.HTTPError as error:
                self._answer(error.code, error.read())

        def _answer(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def store_token(api_client: client.ApiClient, namespace: str, token: str) -> None:
    secret = client.V1Secret(
        metadata=client.V1ObjectMeta(name="prom-token"),
        data={"token": base64.b64encode(token.encode()).decode()},
    )
    core = client.CoreV1Api(api_client)
    try:
        core.replace_namespaced_secret("prom-token", namespace, secret)
    except client.exceptions.ApiException as error:
        if error.status != 404:
            raise
        core.create_namespaced_secret(namespace, secret)


def resume(scenario: Scenario, operator: OperatorProcess) -> None:
    """Returns once the operator has recorded the command."""
    resumed = modelgate(operator.kubeconfig, "resume", "chat", "-n", scenario.namespace)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr


def paused_on(scenario: Scenario, what: str, error: str) -> ModelRolloutStatus:
    def paused(status: ModelRolloutStatus) -> bool:
        message = status.analysis[0].message if status.analysis else None
        return status.phase is Phase.PAUSED and error in (message or "")

    return scenario.wait_for_status(what, paused)


def everything_put_out(
    api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> dict[str, str]:
    rollout = client.CustomObjectsApi(api_client).get_namespaced_custom_object(
        "modelgate.io", "v1alpha1", namespace, "modelrollouts", "chat"
    )
    events = client.CoreV1Api(api_client).list_namespaced_event(namespace)
    with urllib.request.urlopen(f"http://127.0.0.1:{operator.metrics_port}/metrics", timeout=5) as response:
        metrics = response.read().decode()
    outputs = {
        "operator log": operator.logs(),
        "operator metrics": metrics,
        "rollout": json.dumps(rollout),
        "events": json.dumps(api_client.sanitize_for_serialization(events)),
    }
    for command in ("status", "history"):
        shown = modelgate(operator.kubeconfig, command, "chat", "-n", namespace)
        assert shown.returncode == 0, shown.stdout + shown.stderr
        outputs[f"modelgate {command}"] = shown.stdout + shown.stderr
    return outputs


def test_no_token_shows_in_any_output_whether_it_works_or_not(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    guarded_prometheus: str,
) -> None:
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 20}, {"setWeight": 100}],
        prometheus=guarded_prometheus,
        metrics=SEED_METRICS,
        interval="1s",
        rollback={"maxConsecutiveErrors": 2},
    )
    manifest["spec"]["analysis"]["prometheus"]["bearerTokenSecretRef"] = {
        "name": "prom-token",
        "key": "token",
    }
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)
        missing = paused_on(
            scenario, "a pause on the missing Secret", f"Secret {namespace}/prom-token not found"
        )
        assert missing.current_weight == 20  # the first step's weight, and no further

        store_token(api_client, namespace, MALFORMED)
        resume(scenario, operator)
        malformed = paused_on(
            scenario, "a pause on the malformed token", f"Secret {namespace}/prom-token key token"
        )
        error = malformed.analysis[0].message or ""
        assert "spec.analysis.prometheus.bearerTokenSecretRef" in error, error

        store_token(api_client, namespace, WRONG)
        resume(scenario, operator)
        paused_on(scenario, "a pause on the wrong token", "HTTP 401")

        store_token(api_client, namespace, RIGHT)
        resume(scenario, operator)
        scenario.wait_for_status("success with the right token", lambda s: s.phase is Phase.SUCCEEDED)

        outputs = everything_put_out(api_client, namespace, operator)
    leaks = [
        (where, token)
        for where, text in outputs.items()
        for token, part in SECRET_PARTS.items()
        if part in text
    ]
    assert leaks == []
    assert all(outputs.values())
