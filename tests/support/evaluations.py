"""ModelEvaluations for the cluster tests and benchmarks: the manifest, the served model whose
double knows the qa test set (tests/support/gate.py), and waiting for runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kubernetes import client

from modelgate import API_GROUP, API_VERSION, EVALUATION_KIND, EVALUATION_PLURAL
from modelgate.api.evaluation_status import EvaluationRun, ModelEvaluationStatus, RunOutcome
from modelgate.modelevaluation.engine.decision import RUN_NOW_ANNOTATION
from testbed.check_pods import CheckPods
from testbed.fleet import ModelFleet
from testbed.localcluster import LocalCluster
from testbed.manifests import Manifest, model_deployment, model_service
from testbed.waiting import wait_for
from tests.support.gate import knowing, qa_test_set
from tests.support.kube import create

SERVED = "chat-v1"
QUALITY = {"math": 0.8, "recall": 0.8}
NEVER_DURING_A_TEST = "0 0 1 1 *"  # on-demand runs only


def evaluator_check(config_map: str = "qa-set", **policy: Any) -> dict[str, Any]:
    return {
        "name": "quality",
        "evaluator": {"testSet": {"configMap": {"name": config_map, "key": "set.jsonl"}}, "concurrency": 4},
        "timeout": "2m",
        "policy": {"minSamples": 20, "maxDrop": 0.05, **policy},
    }


def model_evaluation(namespace: str, name: str = "chat-quality", **spec: Any) -> Manifest:
    body = {
        "model": {"deployment": SERVED},
        "checks": [evaluator_check()],
        "schedule": NEVER_DURING_A_TEST,
        "maxTestSetAge": "720h",
        **spec,
    }
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": EVALUATION_KIND,
        "metadata": {"name": name, "namespace": namespace},
        "spec": body,
    }


@dataclass
class Evaluations:
    api_client: client.ApiClient
    namespace: str
    name: str = "chat-quality"

    def body(self) -> dict[str, Any]:
        custom = client.CustomObjectsApi(self.api_client)
        found: dict[str, Any] = custom.get_namespaced_custom_object(
            API_GROUP, API_VERSION, self.namespace, EVALUATION_PLURAL, self.name
        )
        return found

    def status(self) -> ModelEvaluationStatus:
        return ModelEvaluationStatus.model_validate(self.body().get("status") or {})

    def patch(self, patch: dict[str, Any]) -> None:
        client.CustomObjectsApi(self.api_client).patch_namespaced_custom_object(
            API_GROUP, API_VERSION, self.namespace, EVALUATION_PLURAL, self.name, patch
        )

    def run_now(self, token: str) -> None:
        self.patch({"metadata": {"annotations": {RUN_NOW_ANNOTATION: token}}})

    def wait_for_runs(self, count: int, timeout: float = 60) -> EvaluationRun:
        """The newest run once `count` runs have finished."""

        def finished() -> EvaluationRun | None:
            runs = self.status().runs
            done = [run for run in runs if run.outcome is not RunOutcome.RUNNING]
            return runs[0] if len(done) >= count and runs[0].outcome is not RunOutcome.RUNNING else None

        try:
            return wait_for(finished, timeout=timeout, interval=0.2, what=f"{count} finished runs")
        except TimeoutError as error:
            raise AssertionError(f"{error}; last status: {self.status().model_dump_json(indent=1)}") from None


@contextmanager
def served_model(
    bed: LocalCluster, api_client: client.ApiClient, namespace: str, workdir: Path
) -> Iterator[tuple[ModelFleet, Path]]:
    """chat-v1 (a Deployment, its Service and a double answering QUALITY of the qa set's items),
    the set in ConfigMap qa-set, and the bed running the namespace's check Pods."""
    test_set = workdir / "qa.jsonl"
    test_set.write_text(qa_test_set(datetime.now(UTC) - timedelta(days=2)))
    config_map = {"name": "qa-set", "namespace": namespace}
    create(
        api_client,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": config_map,
            "data": {"set.jsonl": test_set.read_text()},
        },
    )
    create(api_client, model_deployment(SERVED, namespace, replicas=1))
    create(api_client, model_service(SERVED, namespace))
    fleet = ModelFleet(bed, api_client)
    try:
        fleet.serve(namespace, SERVED, knowing(test_set, QUALITY))
        services = {f"http://{SERVED}.{namespace}.svc:8000": fleet.urls(SERVED)[0]}
        with CheckPods(api_client, namespace, workdir / "pods", services) as pods:
            yield fleet, test_set
            assert pods.failure is None, pods.failure
    finally:
        fleet.stop()
