"""A ModelEvaluation run's check Jobs: the gate's, the serving model answering as both sides.

A ModelEvaluation run's check Jobs: the gate's Jobs (kube/gate_jobs.py, kube/checks.py) with the
serving model answering as both candidate and incumbent, owned by the evaluation."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelgate import EVALUATION_KIND
from modelgate.api.addresses import AddressRefused
from modelgate.api.evaluation_spec import ModelEvaluationSpec
from modelgate.api.evaluation_status import EvaluationRun
from modelgate.api.gate import GateCheck
from modelgate.core.gate_judgement import CheckFailed, CheckObservation
from modelgate.kube.api_errors import KubeError
from modelgate.kube.check_storage import (
    ResultsTarget,
    results_target,
)
from modelgate.kube.checks import (
    EVALUATION_LABEL,
    CheckTarget,
    check_job,
)
from modelgate.kube.gate_jobs import GateJobs, observe_check

REMOVED = "spec.checks: the check was removed while its run ran"


class EvaluationJobs:
    def __init__(self, gate_jobs: GateJobs) -> None:
        self.gate_jobs = gate_jobs
        self.kube = gate_jobs.kube
        # Jobs the API server refused to create, and why (as GateJobs.refused).
        self.refused: dict[tuple[str, str], str] = {}

    def observe(
        self, namespace: str, name: str, spec: ModelEvaluationSpec, run: EvaluationRun
    ) -> dict[str, CheckObservation]:
        """What each check's Job of the run shows; one that cannot be made is a failed check, its
        message naming the field. A result's pointers to its full results are kept only under the
        check's own location in this run."""
        observed: dict[str, CheckObservation] = {}
        indexes = {check.name: index for index, check in enumerate(spec.checks)}
        for record in run.checks:
            index = indexes.get(record.name)
            if index is None:
                observed[record.name] = CheckFailed(REMOVED)
                continue
            job, pods = self.kube.check_job_and_pods(namespace, record.job)
            problem = None
            if job is None:
                refused = self.refused.get((namespace, record.job))
                problem = refused or self._problem(namespace, spec, index)
            check = spec.checks[index]
            results = evaluation_results(spec, check, (namespace, name), run.id)
            observed[record.name] = observe_check(job, pods, problem, check, f"spec.checks[{index}]", results)
        return observed

    def start(
        self, body: Mapping[str, Any], spec: ModelEvaluationSpec, run_id: str, jobs: Mapping[str, str]
    ) -> None:
        """Creates the Job (named in `jobs` by check) of every check of run `run_id` that has none and
        can have one."""
        namespace = body["metadata"]["namespace"]
        policy = self.gate_jobs.policy
        for index, check in enumerate(spec.checks):
            name = jobs.get(check.name)
            if name is None or self.kube.check_job_and_pods(namespace, name)[0] is not None:
                continue
            if self._problem(namespace, spec, index) is not None:
                continue  # the next observe reports it
            field = f"spec.checks[{index}]"
            target = self._target(namespace, spec)
            assert not isinstance(target, str)
            results = evaluation_results(spec, check, (namespace, body["metadata"]["name"]), run_id)
            container, volumes = self.gate_jobs.container(check, target, field, results)
            resources = policy.resources(check.resources, f"{field}.resources")
            assert not isinstance(resources, str)
            job = check_job(
                body,
                check,
                name,
                container,
                volumes,
                resources,
                policy.service_account,
                owner_kind=EVALUATION_KIND,
                owner_label=EVALUATION_LABEL,
            )
            try:
                self.kube.create_job(job)
            except KubeError as error:
                if error.status is None or error.status >= 500:
                    raise
                self.refused[(namespace, name)] = f"its Job {name} cannot be created: {error.message}"

    def delete(self, namespace: str, names: tuple[str, ...]) -> None:
        for name in names:
            self.kube.delete_job(namespace, name)
            self.refused.pop((namespace, name), None)

    def _problem(self, namespace: str, spec: ModelEvaluationSpec, index: int) -> str | None:
        check = spec.checks[index]
        problem = self.gate_jobs.check_problem(namespace, check, f"spec.checks[{index}]")
        if problem is not None or check.job is not None:
            return problem
        target = self._target(namespace, spec)
        return target if isinstance(target, str) else None

    def _target(self, namespace: str, spec: ModelEvaluationSpec) -> CheckTarget | str:
        """The serving model as both sides, or why it cannot be reached, naming the field."""
        model = spec.model
        url = model.url
        if url is None:
            assert model.deployment is not None
            port = self.kube.service_port(namespace, model.deployment)
            if port is None:
                service = f"{namespace}/{model.deployment}"
                return f"spec.model.deployment: Service {service} (the Deployment's name) not found"
            url = f"http://{model.deployment}.{namespace}.svc:{port}/v1"
        else:
            try:
                self.gate_jobs.egress.check_url(url)
            except AddressRefused as refused:  # never the URL itself: it may hold a password
                return f"spec.model.url: refused: the URL {refused}"
        return CheckTarget(
            candidate_url=url, incumbent_url=url, candidate_model=model.name, incumbent_model=model.name
        )


def evaluation_results(
    spec: ModelEvaluationSpec, check: GateCheck, evaluation: tuple[str, str], run_id: str
) -> ResultsTarget | None:
    """Where the check keeps its full results in run `run_id` of the evaluation (namespace, name)."""
    return results_target(spec.results, check, evaluation, run_id, "spec.results")
