"""A Prometheus that wants a bearer token: the rollout reads it from its Secret and succeeds; a
missing Secret, a malformed or a wrong token holds it at weight 0 (its queries are checked before the
candidate's first weight) naming the Secret's field, until the Secret is fixed.
No token, right or wrong, ever shows in anything the operator puts out: its logs, its metrics, the
rollout (status and all), the Events, or what `modelgate status` and `modelgate history` print.

The attacks of a tenant who may write ModelRollouts but not read the Secret, which must fail: the
token is sent only to an address the Secret names (by the operator and by `modelgate report`); a
metadata or API-server address is refused; an address's answer is never echoed; a password in an
address shows nowhere."""

from __future__ import annotations

import base64
import json
import os
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from kubernetes import client

from modelgate.api import ModelRolloutStatus, Phase
from modelgate.api.addresses import ALLOWED_ADDRESSES_ANNOTATION, Refusal
from modelgate.commands import SKIP_RECONCILE_ANNOTATION
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from tests.support.cli import modelgate
from tests.support.kube import create
from tests.support.scenario import Rollouts, serving

# Each token's random part, looked for in every output: found, it says which token leaked, even
# from an escaped or truncated copy of the whole.
SECRET_PARTS = {"right": uuid.uuid4().hex, "wrong": uuid.uuid4().hex, "malformed": uuid.uuid4().hex}
RIGHT = f"mgtoken-{SECRET_PARTS['right']}"
WRONG = f"mgtoken-{SECRET_PARTS['wrong']}"
MALFORMED = f"mgtoken-\u20ac-{SECRET_PARTS['malformed']}"  # not ASCII: http.client cannot send it
BODY_MARKER = uuid.uuid4().hex  # in what an internal service answers
PASSWORD = f"pw{uuid.uuid4().hex}"


@dataclass
class Listener:
    """A server on 127.0.0.1 standing for a tenant's host, or an internal service a tenant points
    at: it answers every GET with `status` and `body`, and records the Authorization header."""

    url: str
    authorizations: list[str | None] = field(default_factory=list)


@pytest.fixture
def listener() -> Iterator[Listener]:
    yield from _listening(403, f"AccessKeyId=ASIA{BODY_MARKER} Token=instance-credentials".encode())


def _listening(status: int, body: bytes) -> Iterator[Listener]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            recorded.authorizations.append(self.headers.get("Authorization"))
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    recorded = Listener(f"http://127.0.0.1:{server.server_address[1]}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield recorded
    finally:
        server.shutdown()
        server.server_close()


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


def store_token(api_client: client.ApiClient, namespace: str, token: str, allowed: str | None) -> None:
    """The Secret prom-token, its annotation naming `allowed` as where the token may go."""
    annotations = None if allowed is None else {ALLOWED_ADDRESSES_ANNOTATION: allowed}
    secret = client.V1Secret(
        metadata=client.V1ObjectMeta(name="prom-token", annotations=annotations),
        data={"token": base64.b64encode(token.encode()).decode()},
    )
    core = client.CoreV1Api(api_client)
    try:
        core.replace_namespaced_secret("prom-token", namespace, secret)
    except client.exceptions.ApiException as error:
        if error.status != 404:
            raise
        core.create_namespaced_secret(namespace, secret)


def held_on(scenario: Rollouts, what: str, error: str) -> tuple[ModelRolloutStatus, str]:
    """The status once the rollout holds its candidate at weight 0 because a query does not answer
    with `error`, and that error as status.analysisCheck records it."""

    def unanswered(status: ModelRolloutStatus) -> str | None:
        check = status.analysis_check
        errors = [q.error for q in check.unanswered] if check is not None else []
        return next((e for e in errors if error in e), None)

    def held(status: ModelRolloutStatus) -> bool:
        return status.phase is Phase.PENDING and unanswered(status) is not None

    status = scenario.wait_for_status(what, held)
    assert status.current_weight == 0 and status.live_weight == 0  # no traffic without a judge
    return status, unanswered(status) or ""


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
    manifest = token_rollout(namespace, guarded_prometheus)
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)
        held_on(scenario, "a hold on the missing Secret", f"Secret {namespace}/prom-token not found")

        store_token(api_client, namespace, MALFORMED, guarded_prometheus)
        _, error = held_on(
            scenario, "a hold on the malformed token", f"Secret {namespace}/prom-token key token"
        )
        assert "spec.analysis.prometheus.bearerTokenSecretRef" in error, error

        store_token(api_client, namespace, WRONG, guarded_prometheus)
        held_on(scenario, "a hold on the wrong token", "HTTP 401")

        store_token(api_client, namespace, RIGHT, guarded_prometheus)  # checked again: no resume needed
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


def token_rollout(namespace: str, address: str) -> dict[str, Any]:
    """A rollout whose analysis asks `address` with the token of Secret prom-token."""
    manifest = model_rollout(
        "chat",
        namespace,
        steps=[{"setWeight": 20}, {"setWeight": 100}],
        prometheus=address,
        metrics=SEED_METRICS,
        interval="1s",
        rollback={"maxConsecutiveErrors": 2},
    )
    manifest["spec"]["analysis"]["prometheus"]["bearerTokenSecretRef"] = {
        "name": "prom-token",
        "key": "token",
    }
    return manifest


def warnings_naming(api_client: client.ApiClient, namespace: str, text: str) -> list[str]:
    events = client.CoreV1Api(api_client).list_namespaced_event(namespace).items
    return [e.message for e in events if e.type == "Warning" and text in (e.message or "")]


def test_a_secrets_token_goes_nowhere_the_secret_does_not_name(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    listener: Listener,
    guarded_prometheus: str,
) -> None:
    """The Secret names the real Prometheus; a tenant's rollout names a host of theirs (the
    listener). Neither the operator nor an admin's `modelgate report` sends it the token."""
    store_token(api_client, namespace, RIGHT, guarded_prometheus)
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(token_rollout(namespace, listener.url))
        withheld, message = held_on(scenario, "a hold on the withheld token", ALLOWED_ADDRESSES_ANNOTATION)
        reported = modelgate(operator.kubeconfig, "report", "chat", "-n", namespace, "-o", os.devnull)
    assert "spec.analysis.prometheus.bearerTokenSecretRef" in message, message
    analysis = next(c for c in withheld.conditions if c.type == "AnalysisReady")
    assert analysis.status == "False" and ALLOWED_ADDRESSES_ANNOTATION in analysis.message, analysis
    assert warnings_naming(api_client, namespace, ALLOWED_ADDRESSES_ANNOTATION)
    assert reported.returncode == 0, reported.stdout + reported.stderr
    assert ALLOWED_ADDRESSES_ANNOTATION in reported.stderr  # it says why it asks without the token
    assert listener.authorizations, "modelgate report asked the listener nothing"
    assert set(listener.authorizations) == {None}


def held_refusing(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, address: str, what: str
) -> str:
    """The error of a rollout without a token whose Prometheus is `address`, once held on `what`."""
    manifest = token_rollout(namespace, address)
    del manifest["spec"]["analysis"]["prometheus"]["bearerTokenSecretRef"]
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)
        return held_on(scenario, f"a hold on {what}", what)[1]


@pytest.mark.parametrize(
    "where",
    [
        # The metadata address as an IPv4-mapped IPv6 literal: admitted (the API server's rules
        # refuse its plain forms), refused by the operator.
        "http://[::ffff:169.254.169.254]/",
        "the API server",
    ],
)
def test_a_metadata_or_api_server_address_is_refused_naming_the_field(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    where: str,
) -> None:
    address = api_client.configuration.host if where == "the API server" else where
    refused = held_refusing(
        local_bed, api_client, namespace, address, "spec.analysis.prometheus.address: refused"
    )
    expected = Refusal.API_SERVER if where == "the API server" else Refusal.LINK_LOCAL
    assert expected.value in refused, refused


def test_an_addresss_answer_is_not_echoed(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    listener: Listener,
) -> None:
    """An internal service the tenant points at answers 403 with what it should not tell: the
    status says HTTP 403, and the body shows nowhere the operator writes."""
    held_refusing(local_bed, api_client, namespace, listener.url, "HTTP 403")
    assert listener.authorizations  # it was asked, and answered
    outputs = everything_put_out(api_client, namespace, operator)
    assert [where for where, text in outputs.items() if BODY_MARKER in text] == []


@pytest.mark.parametrize(
    "url_field", ["spec.analysis.prometheus.address", "spec.gate.checks[0].evaluator.judge.url"]
)
def test_a_password_in_an_address_appears_nowhere(
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    listener: Listener,
    url_field: str,
) -> None:
    """Refused at admission naming the field (the API server's answer, to the writer alone, may
    quote what they wrote), and by `modelgate report --prometheus`, without repeating it."""
    address = listener.url.replace("http://", f"http://admin:{PASSWORD}@")
    manifest = token_rollout(namespace, listener.url)
    if url_field.startswith("spec.gate"):
        judge = {"url": f"{address}/v1", "model": "judge"}
        test_set = {"configMap": {"name": "qa", "key": "set.jsonl"}}
        manifest["spec"]["gate"] = {
            "checks": [{"name": "quality", "evaluator": {"testSet": test_set, "judge": judge}}]
        }
    else:
        manifest["spec"]["analysis"]["prometheus"]["address"] = address
    with pytest.raises(client.exceptions.ApiException) as refused:
        create(api_client, manifest)
    causes = json.loads(refused.value.body or "{}").get("details", {}).get("causes", [])
    assert refused.value.status == 422 and url_field in {c.get("field") for c in causes}, refused.value.body

    # A rollout the operator leaves alone, for `modelgate report` to be given the address by hand.
    stored = token_rollout(namespace, listener.url)
    stored["metadata"]["annotations"] = {SKIP_RECONCILE_ANNOTATION: "true"}
    create(api_client, stored)
    reported = modelgate(
        operator.kubeconfig, "report", "chat", "-n", namespace, "--prometheus", address, "-o", os.devnull
    )
    assert reported.returncode == 1 and Refusal.USERINFO.value in reported.stderr, reported.stderr
    events = client.CoreV1Api(api_client).list_namespaced_event(namespace)
    outputs = {
        "events": json.dumps(api_client.sanitize_for_serialization(events)),
        "operator log": operator.logs(),
        "modelgate report": reported.stdout + reported.stderr,
    }
    assert [where for where, text in outputs.items() if PASSWORD in text] == []
    assert listener.authorizations == []  # and nothing asked the address
