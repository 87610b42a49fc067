"""A ModelEvaluation's full results in the bed's S3-compatible server (moto): a run's check writes
them under <url>/<namespace>/<evaluation>/<run id>/<check>/<test-set version>/ and the run's
storageKey points at them, and `modelgate evaluations -o s3://...` writes its history there; a
storage Secret that does not exist is a Failed run naming the field."""

from __future__ import annotations

import json
from pathlib import Path

from kubernetes import client

from modelgate.api.evaluation_status import RunOutcome, RunReason
from modelgate.api.object_url import parse_object_url
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from testbed.s3_server import S3Server
from tests.cluster.test_gate_storage import storage_secret, stored_lines
from tests.support.cli import modelgate
from tests.support.evaluations import Evaluations, evaluator_check, model_evaluation, served_model
from tests.support.gate import ITEMS
from tests.support.kube import create
from tests.support.storage import aws_environment, bed_store, fresh_url, run

SECRET = "store"


def test_a_runs_results_land_under_the_key_and_the_run_points_at_them(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    s3_server: S3Server,
    tmp_path: Path,
) -> None:
    prefix = fresh_url(s3_server, "evaluations")
    storage_secret(api_client, namespace, SECRET, s3_server.secret_data())
    evaluations = Evaluations(api_client, namespace)
    with served_model(local_bed, api_client, namespace, tmp_path):
        results = {"s3": {"url": str(prefix), "secret": SECRET}}
        create(api_client, model_evaluation(namespace, results=results))
        evaluations.run_now("1")
        done = evaluations.wait_for_runs(1, timeout=30)
    assert done.outcome is RunOutcome.PASSED, done.message
    assert done.storage_key is not None
    location = parse_object_url(done.storage_key)
    segments = location.key.removeprefix(prefix.key + "/").split("/")
    assert segments[:4] == [namespace, evaluations.name, done.id, "quality"]
    assert segments[4].startswith("sha256-") and len(segments) == 5  # the test set's version
    header, *items = stored_lines(s3_server, str(location.child("results.jsonl")))
    assert header["result"]["testSet"]["name"] == "qa"
    assert {s["name"] for s in header["result"]["scores"]} == {s.name for s in done.checks[0].scores}
    assert len(items) == 2 * ITEMS

    history_url = fresh_url(s3_server, "history.json")
    command = ("evaluations", evaluations.name, "-n", namespace)
    written = modelgate(operator.kubeconfig, *command, "-o", str(history_url), env=aws_environment(s3_server))
    assert written.returncode == 0, written.stdout + written.stderr
    history = json.loads(run(bed_store(s3_server).read(history_url)).data)
    assert [r["storageKey"] for r in history["runs"]] == [done.storage_key]
    assert history["scores"]["quality"]["math"][0]["value"] == done.checks[0].scores[0].value


def test_a_missing_storage_secret_fails_the_run_naming_the_field(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    s3_server: S3Server,
    tmp_path: Path,
) -> None:
    """The bed's kubelet leaves a Pod whose Secret is missing waiting (CreateContainerConfigError):
    the check fails at once, naming every field that names a Secret it reads."""
    stored_set = {"s3": {"url": str(fresh_url(s3_server, "qa.jsonl")), "secret": "absent-set"}}
    prefix = fresh_url(s3_server, "evaluations")
    stored = {**evaluator_check(), "name": "stored", "evaluator": {"testSet": stored_set}}
    evaluations = Evaluations(api_client, namespace)
    with served_model(local_bed, api_client, namespace, tmp_path):
        results = {"s3": {"url": str(prefix), "secret": "absent-results"}}
        create(api_client, model_evaluation(namespace, checks=[stored, evaluator_check()], results=results))
        evaluations.run_now("1")
        failed = evaluations.wait_for_runs(1, timeout=30)
    assert (failed.outcome, failed.reason) == (RunOutcome.FAILED, RunReason.CHECK_ERROR)
    assert failed.storage_key is None
    errors = {check.name: check.error or "" for check in failed.checks}
    assert "spec.checks[0].evaluator.testSet.s3.secret (absent-set)" in errors["stored"], errors
    assert all("spec.results.s3.secret (absent-results)" in error for error in errors.values()), errors
