"""Gate checks whose test set is in S3-compatible storage (the bed's moto server, checking
credentials), on the bed: they pass and fail as their ConfigMap twins (tests/cluster/
test_gate_evaluator.py) do, their full per-item results land under the documented key, and the
check's status points at them; a missing Secret, an unreachable store or a store's error answer is
the check's error, naming the field or the key (and the HTTP status, never the store's answer), and
the candidate never gets traffic."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from kubernetes import client

from modelgate.api import Phase, Verdict
from modelgate.api.gate_status import CheckState, GateDecision
from modelgate.api.object_url import parse_object_url
from testbed.localcluster import LocalCluster
from testbed.manifests import model_rollout
from testbed.operator_process import OperatorProcess
from testbed.ports import free_port
from testbed.s3_server import S3Server
from tests.cluster.test_gate_evaluator import BETTER, POLICY, ended, evaluated, passed_as_better, quality
from tests.support.cli import modelgate
from tests.support.gate import ITEMS, Json, check_pods, gated_rollout, qa_test_set, scenario
from tests.support.kube import create
from tests.support.scenario import Scenario
from tests.support.storage import aws_environment, bed_store, fresh_url, run
from tests.support.telling_server import MARKER, telling_server

__all__ = ["check_pods", "scenario"]  # the fixtures
SECRET = "store"


def storage_secret(api_client: client.ApiClient, namespace: str, name: str, data: dict[str, str]) -> None:
    create(
        api_client,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name, "namespace": namespace},
            "stringData": data,
        },
    )


def stored_lines(s3_server: S3Server, url: str) -> list[Json]:
    """The JSON lines of a results object in the bed's store."""
    data = run(bed_store(s3_server).read(parse_object_url(url))).data
    return [json.loads(line) for line in data.splitlines()]


@pytest.fixture
def stored_source(s3_server: S3Server, api_client: client.ApiClient, namespace: str) -> Json:
    """The test set in storage and the Secret that reaches it: the evaluator's testSet source."""
    url = fresh_url(s3_server, "qa.jsonl")
    run(bed_store(s3_server).write(url, qa_test_set(datetime.now(UTC) - timedelta(days=2)).encode()))
    storage_secret(api_client, namespace, SECRET, s3_server.secret_data())
    return {"s3": {"url": str(url), "secret": SECRET}}


@pytest.mark.usefixtures("operator")
def test_a_stored_test_set_passes_as_its_config_map_twin_and_its_results_land_under_the_key(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    s3_server: S3Server,
    stored_source: Json,
    tmp_path: Path,
) -> None:
    results = {"s3": {"url": f"s3://{s3_server.buckets[0]}/gate-results", "secret": SECRET}}
    with evaluated(
        local_bed, api_client, namespace, tmp_path, BETTER, checks=[quality(stored_source)], results=results
    ) as scenario:
        final = ended(scenario)
    check = passed_as_better(final)
    assert final.gate is not None and len(check.results_urls) == 1
    (pointer,) = check.results_urls
    key = parse_object_url(pointer).key.split("/")
    assert key[:5] == ["gate-results", namespace, "chat", final.gate.run, "quality"]
    assert key[5].startswith("sha256-") and key[6] == "results.jsonl"
    header, *items = stored_lines(s3_server, pointer)
    assert header["inputs"]["testSet"]["source"] == stored_source["s3"]["url"]
    assert {s["name"]: s["candidate"] for s in header["result"]["scores"]} == {"math": 0.88, "recall": 0.84}
    assert len(items) == 2 * ITEMS
    for capability, share in BETTER.items():
        passed = [i for i in items if i["capability"] == capability and i["candidate"]["passed"]]
        assert len(passed) == round(share * ITEMS)


SHARDS = 3


@pytest.mark.usefixtures("operator")
def test_each_shard_of_a_parallel_check_reads_the_stored_set_and_writes_its_own_results(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    s3_server: S3Server,
    stored_source: Json,
    tmp_path: Path,
) -> None:
    """Every shard's Pod gets the Secret's values (it reads the stored set) and writes its own items
    to results-<index>-of-<N>.jsonl beside the others; the status points at each, in index order."""
    results = {"s3": {"url": f"s3://{s3_server.buckets[0]}/gate-results", "secret": SECRET}}
    checks = [quality(stored_source, parallelism=SHARDS)]
    with evaluated(
        local_bed, api_client, namespace, tmp_path, BETTER, checks=checks, results=results
    ) as scenario:
        final = ended(scenario)
    check = passed_as_better(final)
    assert final.gate is not None and len(check.results_urls) == SHARDS
    keys = [parse_object_url(url).key.split("/") for url in check.results_urls]
    assert {tuple(key[:6]) for key in keys} == {tuple(keys[0][:6])}  # one run's folder
    assert keys[0][:5] == ["gate-results", namespace, "chat", final.gate.run, "quality"]
    assert [key[6] for key in keys] == [f"results-{i}-of-{SHARDS}.jsonl" for i in range(SHARDS)]
    ids: list[str] = []
    for index, url in enumerate(check.results_urls):
        header, *items = stored_lines(s3_server, url)
        assert (header["result"]["index"], header["result"]["shards"]) == (index, SHARDS)
        assert items and all(item["kind"] == "testSet" for item in items)
        ids += [item["id"] for item in items]
    assert len(ids) == len(set(ids)) == 2 * ITEMS  # every item once, across the shards


def test_the_report_goes_to_storage_and_wrong_credentials_are_refused_naming_the_key(
    api_client: client.ApiClient, namespace: str, operator: OperatorProcess, s3_server: S3Server
) -> None:
    """`modelgate report --output s3://...` with the $AWS_* credentials, as a person's shell has them."""
    create(api_client, model_rollout("chat", namespace, steps=[{"setWeight": 50}]))
    url = fresh_url(s3_server, "chat-report.html")
    aws = aws_environment(s3_server)
    report = ("report", "chat", "-n", namespace, "-o", str(url))
    written = modelgate(operator.kubeconfig, *report, env=aws)
    assert written.returncode == 0, written.stdout + written.stderr
    page = run(bed_store(s3_server).read(url)).data.decode()
    assert page.lstrip().lower().startswith("<!doctype html") and "chat" in page

    wrong = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYWRONGKEY"
    refused = modelgate(operator.kubeconfig, *report, env={**aws, "AWS_SECRET_ACCESS_KEY": wrong})
    assert refused.returncode == 1
    assert str(url) in refused.stderr and "credentials" in refused.stderr
    assert wrong not in refused.stdout + refused.stderr


@pytest.mark.usefixtures("operator")
def test_a_stored_test_set_rejects_a_worse_candidate_as_its_config_map_twin(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, stored_source: Json, tmp_path: Path
) -> None:
    worse = {"math": 0.6, "recall": 0.84}
    checks = [quality(stored_source)]
    with evaluated(local_bed, api_client, namespace, tmp_path, worse, checks=checks) as scenario:
        final = ended(scenario)
        assert scenario.recorder.candidate_weights() == [0]
    assert final.phase is Phase.FAILED, final.message
    assert final.gate is not None and final.gate.decision is GateDecision.REJECT
    (check,) = final.gate.checks
    assert (check.state, check.verdict) == (CheckState.MEASURED, Verdict.FAIL), check.message
    assert {s.name: s.verdict for s in check.scores} == {"math": Verdict.FAIL, "recall": Verdict.PASS}


def test_a_missing_secret_an_unreachable_store_and_an_error_answer_are_errors_naming_the_field_and_the_key(
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    s3_server: S3Server,
    scenario: Scenario,
) -> None:
    """`scenario` runs the check Pods as the bed's kubelet does: one whose Secret is missing never
    starts; one whose store does not answer exits saying so; one whose store answers an error says
    its HTTP status, never the store's answer or endpoint (not in status, not in the operator's
    log). No check measured: the gate rejects (onError Reject) and the candidate never gets traffic."""
    url = fresh_url(s3_server, "qa.jsonl")
    closed = {**s3_server.secret_data(), "endpoint": f"http://127.0.0.1:{free_port()}"}
    storage_secret(api_client, namespace, "dead-store", closed)
    checks = [
        {"name": "no-secret", "evaluator": {"testSet": {"s3": {"url": str(url), "secret": "absent"}}}},
        {"name": "no-store", "evaluator": {"testSet": {"s3": {"url": str(url), "secret": "dead-store"}}}},
        {"name": "telling", "evaluator": {"testSet": {"s3": {"url": str(url), "secret": "telling-store"}}}},
    ]
    with telling_server(500) as endpoint:
        storage_secret(
            api_client, namespace, "telling-store", {**s3_server.secret_data(), "endpoint": endpoint}
        )
        scenario.apply(
            gated_rollout(
                namespace, [{**c, "timeout": "1m", "policy": POLICY} for c in checks], [{"setWeight": 50}]
            )
        )
        final = ended(scenario)
    assert final.gate is not None and final.gate.decision is GateDecision.REJECT
    no_secret, no_store, telling = (final.gate.check(name) for name in ("no-secret", "no-store", "telling"))
    assert no_secret is not None and no_secret.state is CheckState.ERROR
    assert "spec.gate.checks[0].evaluator.testSet.s3.secret (absent)" in (no_secret.message or "")
    assert no_store is not None and no_store.state is CheckState.ERROR
    assert str(url) in (no_store.message or "") and "cannot be reached" in (no_store.message or "")
    assert "spec.gate.checks[1].evaluator.testSet.s3.url" in (no_store.message or "")
    assert s3_server.secret_access_key not in (no_store.message or "")
    assert telling is not None and telling.state is CheckState.ERROR
    for shown in (telling.message or "", operator.logs()):
        assert MARKER not in shown and endpoint.removeprefix("http://") not in shown
    assert str(url) in (telling.message or "") and "HTTP 500" in (telling.message or ""), telling.message
    assert scenario.recorder.candidate_weights() == [0]
