"""A ModelEvaluation's full results in object storage (spec.results): each run's check Job writes under
the evaluation's own key (namespace, evaluation, run id, check; the evaluator adds the test-set
version) with the Secret's values by reference, only pointers there are kept, and the judged run's
storageKey points at them."""

from __future__ import annotations

from typing import Any, cast

from modelgate.api.evaluation_spec import ModelEvaluationSpec, parse_evaluation_spec
from modelgate.api.evaluation_status import CheckRecord, EvaluationRun, RunOutcome
from modelgate.api.gate_result import GateResult
from modelgate.core.gate_judgement import CheckMeasured
from modelgate.kube import Kube
from modelgate.kube.check_pod_policy import CheckPodPolicy
from modelgate.kube.evaluation_jobs import EvaluationJobs
from modelgate.kube.gate_jobs import GateJobs
from modelgate.modelevaluation.engine.run_outcome import storage_key
from tests.unit.test_evaluation_decide import CREATED, finished, measured

RESULTS = {"s3": {"url": "s3://results/evals", "secret": "results-store"}}
RUN = "20261201T100130"
# The run's own location: <url>/<namespace>/<evaluation>/<run id>.
RUN_LOCATION = f"s3://results/evals/serving/chat-eval/{RUN}"


def evaluation_spec(**fields: Any) -> ModelEvaluationSpec:
    check = {"name": "quality", "evaluator": {"testSet": {"configMap": {"name": "qa", "key": "qa.jsonl"}}}}
    body = {"model": {"deployment": "chat"}, "checks": [check], "schedule": "@hourly", **fields}
    return parse_evaluation_spec(body)


class JobsKube:
    """The reads EvaluationJobs makes, answered as if everything exists; Jobs kept as created."""

    server_url = "https://127.0.0.1:6443"

    def __init__(self, jobs: dict[str, dict[str, Any]] | None = None, pods: list[Any] | None = None) -> None:
        self.jobs = jobs or {}
        self.pods = pods or []

    def check_job_and_pods(self, namespace: str, name: str) -> tuple[dict[str, Any] | None, list[Any]]:
        return self.jobs.get(name), self.pods

    def create_job(self, job: dict[str, Any]) -> None:
        self.jobs[job["metadata"]["name"]] = job

    def service_port(self, namespace: str, name: str) -> int:
        return 8000

    def config_map_keys(self, namespace: str, name: str) -> set[str]:
        return {"qa.jsonl"}


def evaluation_jobs(kube: JobsKube) -> EvaluationJobs:
    gate_jobs = GateJobs(cast(Kube, kube), "modelgate:1", CheckPodPolicy(), lambda spec, side: None)
    return EvaluationJobs(gate_jobs)


BODY = {"metadata": {"name": "chat-eval", "namespace": "serving", "uid": "uid-1"}}


def started_container(spec: ModelEvaluationSpec) -> dict[str, Any]:
    kube = JobsKube()
    evaluation_jobs(kube).start(BODY, spec, RUN, {"quality": "chat-eval-quality-1"})
    (job,) = kube.jobs.values()
    (container,) = job["spec"]["template"]["spec"]["containers"]
    return cast(dict[str, Any], container)


def test_a_runs_job_writes_its_results_under_the_evaluations_key_with_the_secret_by_reference() -> None:
    container = started_container(evaluation_spec(results=RESULTS))
    assert f"--results={RUN_LOCATION}/quality" in container["args"]
    refs = [e for e in container["env"] if e["name"].startswith("MODELGATE_RESULTS_S3_")]
    assert refs and all("value" not in e for e in refs)
    assert {e["valueFrom"]["secretKeyRef"]["name"] for e in refs} == {"results-store"}
    without = started_container(evaluation_spec())
    assert not any(arg.startswith("--results") for arg in without["args"])


def completed_job(name: str) -> dict[str, Any]:
    job = {"metadata": {"name": name, "uid": "job-uid"}, "spec": {"template": {"spec": {}}}}
    job["status"] = {"conditions": [{"type": "Complete", "status": "True"}]}
    return job


def observed_pointers(pointer: str) -> tuple[str, ...]:
    """What observe keeps of a completed check's result that points at `pointer`."""
    spec = evaluation_spec(results=RESULTS)
    name = "chat-eval-quality-1"
    result = GateResult(summary="ok", results_url=pointer).model_dump_json(by_alias=True)
    state = {"terminated": {"exitCode": 0, "message": result}}
    pod = {
        "metadata": {"ownerReferences": [{"uid": "job-uid", "controller": True}]},
        "spec": {},
        "status": {"containerStatuses": [{"name": "check", "state": state}]},
    }
    kube = JobsKube({name: completed_job(name)}, [pod])
    run = EvaluationRun(
        id=RUN,
        started_at=CREATED,
        outcome=RunOutcome.RUNNING,
        checks=(CheckRecord(name="quality", job=name),),
    )
    seen = evaluation_jobs(kube).observe("serving", "chat-eval", spec, run)["quality"]
    assert isinstance(seen, CheckMeasured), seen
    return seen.results_urls


def test_only_a_pointer_under_the_runs_own_check_location_is_kept() -> None:
    own = f"{RUN_LOCATION}/quality/v7/results.jsonl"
    assert observed_pointers(own) == (own,)
    other_run = "s3://results/evals/serving/chat-eval/20261201T090000/quality/v7/results.jsonl"
    assert observed_pointers(other_run) == ()
    assert observed_pointers("s3://results/evals/other-team/eval/x/quality/v7/results.jsonl") == ()


def pointing(*urls: str) -> CheckMeasured:
    return CheckMeasured(measured(0.8).result, urls)


def test_the_judged_run_records_where_its_results_are() -> None:
    spec = parse_evaluation_spec(
        {
            "model": {"deployment": "chat"},
            "checks": [{"name": "quality", "job": {"image": "checks/quality:1"}}],
            "schedule": "*/5 * * * *",
        }
    )
    one = f"{RUN_LOCATION}/quality/v7/results.jsonl"
    (run,) = finished(spec, pointing(one)).status.runs
    assert run.outcome is RunOutcome.PASSED and run.storage_key == f"{RUN_LOCATION}/quality/v7"
    shards = [f"{RUN_LOCATION}/quality/v7/results-{i}-of-2.jsonl" for i in range(2)]
    assert finished(spec, pointing(*shards)).status.runs[0].storage_key == f"{RUN_LOCATION}/quality/v7"
    assert finished(spec, measured(0.8)).status.runs[0].storage_key is None, "no results kept"


def test_a_run_of_several_checks_points_at_its_own_location() -> None:
    urls = [f"{RUN_LOCATION}/{check}/v7/results.jsonl" for check in ("quality", "safety")]
    assert storage_key([pointing(urls[0]), pointing(urls[1])]) == RUN_LOCATION
