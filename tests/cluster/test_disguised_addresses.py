"""Issue 35's acceptance on the bed, with loopback refused as in a real cluster (an operator of this
test's own, started without --allow-loopback; its evaluator Jobs inherit that): a rollout's
notification receivers written as disguised forms of 127.0.0.1 (Unicode digits and stops, enclosed
numbers, decimal, octal, NAT64 under both prefixes; the listener they name, and the API server's
port) and of the metadata address never get a connection. Each is a NotificationFailed Event naming
the receiver and no address, and the rollout is promoted all the same. The receivers' URLs are in a
Secret, which no admission rule reads: the operator's own check is what stops them. URLs written in
a spec (Prometheus, a gate check's models and judge, a ModelEvaluation's model) are refused in these
forms at admission (tests/support/bad_rollouts.py, run by test_bad_manifests.py); a NAT64 form is
admitted but no route reaches it here, so tests/unit/test_disguised_hosts.py proves its refusal,
with every form through each HTTP client. A storage Secret's endpoint, which admission does not
read either, in disguised forms of the listener's address: the check cannot read its test set, the
gate rejects, and the listener sees no connection."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from kubernetes import client

from modelgate.api import Phase
from modelgate.api.gate_status import CheckState, GateDecision
from modelgate.core import Reason
from testbed.localcluster import LocalCluster
from testbed.manifests import http_route, model_deployment, model_rollout, model_service
from testbed.operator_process import OperatorProcess
from testbed.waiting import wait_for
from tests.support.disguised_hosts import LOOPBACK_FORMS, METADATA_FORMS, NAT64_FORMS
from tests.support.gate import POLICY, check_pods, ended, gated_rollout, scenario
from tests.support.kube import create
from tests.support.listener import Listener, listener
from tests.support.notifications import notifying
from tests.support.operators import admin_operator_stopped, operator_events, running
from tests.support.scenario import Rollouts, Scenario, settled

__all__ = ["check_pods", "listener", "scenario"]  # the fixtures


@pytest.fixture
def strict_operator(
    local_bed: LocalCluster, operator: OperatorProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OperatorProcess]:
    strict = OperatorProcess(local_bed.kubeconfig, tmp_path_factory.mktemp("strict"), allow_loopback=False)
    with admin_operator_stopped(operator), running(strict):
        yield strict


def disguised_urls(listener_port: int, api_server_port: int) -> list[str]:
    """Ten, a rollout's most receivers: 127.0.0.1 in fullwidth digits, with ideographic stops, in
    enclosed numbers, decimal, octal and behind both NAT64 prefixes, at the listener; the API
    server's port with ideographic stops; the metadata address fullwidth and in enclosed numbers."""
    fullwidth, ideographic, _, enclosed, decimal, octal, *_ = LOOPBACK_FORMS
    loopback = [fullwidth, ideographic, enclosed, decimal, octal, *NAT64_FORMS]
    metadata_fullwidth, *_, metadata_enclosed = METADATA_FORMS
    return [
        *(f"http://{host}:{listener_port}/hook/secret-token" for host in loopback),
        f"https://{ideographic}:{api_server_port}/api",
        *(f"http://{host}/latest/meta-data/" for host in (metadata_fullwidth, metadata_enclosed)),
    ]


def test_receivers_at_disguised_local_addresses_get_no_connection(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    strict_operator: OperatorProcess,
    listener: Listener,
) -> None:
    for model in ("chat-v1", "chat-v2"):
        create(api_client, model_deployment(model, namespace, replicas=1))
        create(api_client, model_service(model, namespace))
    create(api_client, http_route("chat", namespace, {"chat-v1": 100, "chat-v2": 0}))
    api_server_port = int(urlsplit(local_bed.api_server_url).port or 443)
    urls = disguised_urls(listener.port, api_server_port)
    receivers = {f"r{index}": ("webhook", url) for index, url in enumerate(urls)}
    rollouts = Rollouts(api_client, namespace)
    rollouts.apply(
        notifying(api_client, model_rollout("chat", namespace, steps=[{"setWeight": 50}]), receivers)
    )
    rollouts.wait_for_status("the rollout to be promoted", settled(Phase.SUCCEEDED))

    def failed_notes() -> list[str]:
        events = operator_events(api_client, namespace).get("chat", [])
        return [event["note"] for event in events if event["reason"] == Reason.NOTIFICATION_FAILED.value]

    wait_for(
        lambda: all(any(f"receiver {name} " in note for note in failed_notes()) for name in receivers),
        timeout=30,
        what="a NotificationFailed Event for every receiver",
    )
    assert listener.connections() == 0
    never_said = ("127.0.0.1", "169.254.169.254", "secret-token", "meta-data")  # the address, the URL
    for note in failed_notes():
        assert not any(part in note for part in never_said), note
        # Refused before any attempt ("its URL reaches ..."), not a connection that failed: a NAT64
        # form has no route here, so only the refusal shows that the check stopped it.
        assert "after 1 attempt: its URL" in note, note


def test_a_store_at_a_disguised_loopback_endpoint_gets_no_connection(
    api_client: client.ApiClient,
    namespace: str,
    strict_operator: OperatorProcess,
    listener: Listener,
    scenario: Scenario,
) -> None:
    fullwidth, _, _, _, decimal, *_ = LOOPBACK_FORMS
    checks = []
    for name, host in (("fullwidth", fullwidth), ("decimal", decimal)):
        secret = {"endpoint": f"http://{host}:{listener.port}", "region": "us-east-1"}
        secret |= {"accessKeyId": "key", "secretAccessKey": "secret"}
        create(
            api_client,
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "namespace": namespace},
                "stringData": secret,
            },
        )
        source = {"s3": {"url": "s3://evals/qa.jsonl", "secret": name}}
        checks.append({"name": name, "evaluator": {"testSet": source}, "timeout": "1m", "policy": POLICY})
    scenario.apply(gated_rollout(namespace, checks, [{"setWeight": 50}]))
    final = ended(scenario)

    assert final.gate is not None and final.gate.decision is GateDecision.REJECT, final.message
    assert {check.name: check.state for check in final.gate.checks} == {
        "fullwidth": CheckState.ERROR,
        "decimal": CheckState.ERROR,
    }
    assert scenario.recorder.candidate_weights() == [0]
    assert listener.connections() == 0
