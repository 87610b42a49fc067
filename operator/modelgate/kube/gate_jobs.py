"""The gate's check Jobs in the cluster: read, started and deleted.

The gate's check Jobs in the cluster: what each shows (read fresh every tick of a Gating rollout),
starting those not started, and deleting them once the gate has decided."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from modelgate.api import ModelRolloutSpec
from modelgate.api.addresses import AddressRefused, EgressPolicy
from modelgate.api.gate import Endpoint, Evaluator, GateCheck
from modelgate.api.gate_status import GateStatus
from modelgate.api.series import SeriesSide
from modelgate.core.gate_judgement import CheckFailed, CheckMeasured, CheckObservation
from modelgate.egress import evaluator_environment
from modelgate.kube.api_errors import KubeError
from modelgate.kube.check_pod_policy import CheckPodPolicy
from modelgate.kube.check_storage import (
    ResultsTarget,
    own_pointer_only,
    results_target,
    storage_secret_fields,
    stored_url_fields,
)
from modelgate.kube.checks import (
    CheckTarget,
    check_job,
    custom_container,
    evaluator_container,
    observe_job,
)
from modelgate.kube.client import Kube
from modelgate.kube.connection import Object

# The operator's own image, which has `modelgate eval`: the chart sets it to the operator's image.
EVALUATOR_IMAGE_ENV = "MODELGATE_EVALUATOR_IMAGE"


# The Service that reaches a side, as the rollout's router names it (None: an InferencePool side):
# routers.backend_service, given by the reconciler (routers sit above kube).
BackendService = Callable[[ModelRolloutSpec, SeriesSide], str | None]


class GateJobs:
    def __init__(
        self,
        kube: Kube,
        evaluator_image: str | None,
        policy: CheckPodPolicy,
        backend_service: BackendService,
        egress: EgressPolicy | None = None,
        evaluator_env: Mapping[str, str] | None = None,
    ) -> None:
        self.kube = kube
        self.backend_service = backend_service
        self.evaluator_image = evaluator_image
        self.policy = policy
        # The evaluator holds every URL to the operator's own policy (`evaluator_env`, which
        # egress.evaluator_environment makes), and resolves names; the operator refuses beforehand
        # what the URLs themselves show.
        self.egress = egress or EgressPolicy()
        self.evaluator_env = (
            evaluator_environment(kube.server_url, {}) if evaluator_env is None else dict(evaluator_env)
        )
        # Jobs the API server refused to create (by namespace and name), and why: the next observe
        # reports them as failed checks. A restarted operator tries once more.
        self.refused: dict[tuple[str, str], str] = {}

    def observe(
        self, namespace: str, rollout: str, spec: ModelRolloutSpec, gate: GateStatus
    ) -> dict[str, CheckObservation]:
        """What each undecided check's Job shows; a Job that cannot be made (its test set's ConfigMap is
        missing, ...) is a failed check, named by its field. A result's pointer to its full results
        is kept only where the operator told the check to write them."""
        observed: dict[str, CheckObservation] = {}
        for index, check in _checks(spec):
            status = gate.check(check.name)
            if status is None or status.verdict is not None:
                continue
            job, pods = self.kube.check_job_and_pods(namespace, status.job)
            problem = None
            if job is None:
                refused = self.refused.get((namespace, status.job))
                problem = refused or self._prerequisite_problem(namespace, spec, check, index)
            results = _results_target(namespace, rollout, spec, gate, check)
            field = f"spec.gate.checks[{index}]"
            observed[check.name] = observe_check(job, pods, problem, check, field, results)
        return observed

    def start(self, body: Mapping[str, Any], spec: ModelRolloutSpec, gate: GateStatus) -> None:
        """Creates the Job of every undecided check that has none and can have one."""
        namespace = body["metadata"]["namespace"]
        for index, check in _checks(spec):
            status = gate.check(check.name)
            if status is None or status.verdict is not None:
                continue
            # A running Job's tick stops here, before the prerequisites' reads.
            if self.kube.check_job_and_pods(namespace, status.job)[0] is not None:
                continue
            if self._prerequisite_problem(namespace, spec, check, index) is not None:
                continue  # the next tick's observe reports it
            results = _results_target(namespace, body["metadata"]["name"], spec, gate, check)
            container, volumes = self._container(namespace, spec, check, index, results)
            resources = self.policy.resources(check.resources, f"spec.gate.checks[{index}].resources")
            assert not isinstance(resources, str)  # refused in _prerequisite_problem
            job = check_job(
                body, check, status.job, container, volumes, resources, self.policy.service_account
            )
            try:
                self.kube.create_job(job)
            except KubeError as error:
                if error.status is None or error.status >= 500:
                    raise  # the API server cannot be asked now: the tick is retried
                self.refused[(namespace, status.job)] = (
                    f"its Job {status.job} cannot be created: {error.message}"
                )

    def delete(self, namespace: str, gate: GateStatus) -> None:
        for check in gate.checks:
            self.kube.delete_job(namespace, check.job)

    def _container(
        self,
        namespace: str,
        spec: ModelRolloutSpec,
        check: GateCheck,
        index: int,
        results: ResultsTarget | None,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        target = None if check.job is not None else self._target(namespace, spec, check)
        assert not isinstance(target, str)
        return self.container(check, target, f"spec.gate.checks[{index}]", results)

    def container(
        self, check: GateCheck, target: CheckTarget | None, field: str, results: ResultsTarget | None = None
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The check's container and volumes; `target` for the built-in evaluator, `results` where
        it keeps its full results (storage Secrets reach it by reference either way)."""
        if check.job is not None:
            return custom_container(check), []
        assert target is not None and self.evaluator_image is not None
        return evaluator_container(check, target, self.evaluator_image, field, self.evaluator_env, results)

    def _prerequisite_problem(
        self, namespace: str, spec: ModelRolloutSpec, check: GateCheck, index: int
    ) -> str | None:
        """Why the check's Job cannot be made, naming the field; None when it can."""
        problem = self.check_problem(namespace, check, f"spec.gate.checks[{index}]")
        if problem is not None or check.job is not None:
            return problem
        target = self._target(namespace, spec, check)
        return target if isinstance(target, str) else None

    def check_problem(self, namespace: str, check: GateCheck, field: str) -> str | None:
        """Why the check's Job cannot be made whatever it evaluates (its resources, its image, its
        URLs, its ConfigMaps), naming the field below `field`; None when nothing stands in the way."""
        resources = self.policy.resources(check.resources, f"{field}.resources")
        if isinstance(resources, str):
            return resources
        if check.job is not None:
            return self.policy.image_problem(check.job.image, f"{field}.job.image")
        evaluator = check.evaluator
        assert evaluator is not None
        if not self.evaluator_image:
            return f"{field}.evaluator: the operator has no evaluator image (${EVALUATOR_IMAGE_ENV})"
        for name, url in _tenant_urls(evaluator):
            try:
                self.egress.check_url(url)
            except AddressRefused as refused:  # never the URL itself: it may hold a password
                return f"{field}.evaluator.{name}: refused: the URL {refused}"
        for name, source in (("testSet", evaluator.test_set), ("replay", evaluator.replay)):
            ref = None if source is None else source.config_map
            if ref is None:
                continue
            keys = self.kube.config_map_keys(namespace, ref.name)
            if keys is None:
                return f"{field}.evaluator.{name}.configMap: ConfigMap {namespace}/{ref.name} not found"
            if ref.key not in keys:
                listed = ", ".join(sorted(keys)) or "none"
                where = f"{field}.evaluator.{name}.configMap: ConfigMap {namespace}/{ref.name}"
                return f"{where} has no key {ref.key!r} (it has: {listed})"
        return None

    def _target(self, namespace: str, spec: ModelRolloutSpec, check: GateCheck) -> CheckTarget | str:
        evaluator = check.evaluator
        assert evaluator is not None
        urls = []
        sides: tuple[tuple[SeriesSide, Endpoint], ...] = (
            ("candidate", evaluator.candidate),
            ("incumbent", evaluator.incumbent),
        )
        for side, endpoint in sides:
            if endpoint.url is not None:
                urls.append(endpoint.url)
                continue
            service = self.backend_service(spec, side)
            if service is None:
                return (
                    f"spec.gate: set evaluator.{side}.url: an InferencePool side has no Service to default to"
                )
            port = self.kube.service_port(namespace, service)
            if port is None:
                service_name = f"{namespace}/{service}"
                return (
                    f"spec.gate: evaluator.{side}.url defaults to Service {service_name}, which is not found"
                )
            urls.append(f"http://{service}.{namespace}.svc:{port}/v1")
        return CheckTarget(
            candidate_url=urls[0],
            incumbent_url=urls[1],
            candidate_model=evaluator.candidate.model or spec.candidate.reported_model or spec.candidate.name,
            incumbent_model=evaluator.incumbent.model or spec.incumbent.reported_model or spec.incumbent.name,
        )


def _results_target(
    namespace: str, rollout: str, spec: ModelRolloutSpec, gate: GateStatus, check: GateCheck
) -> ResultsTarget | None:
    """Where the evaluator writes this check's full results in this run of the gate, if anywhere."""
    results = spec.gate.results if spec.gate is not None else None
    return results_target(results, check, (namespace, rollout), gate.run, "spec.gate.results")


def _tenant_urls(evaluator: Evaluator) -> list[tuple[str, str]]:
    """The URLs the spec gives the evaluator, by their field below `evaluator`."""
    named = (
        ("testSet.url", evaluator.test_set and evaluator.test_set.url),
        ("replay.url", evaluator.replay and evaluator.replay.url),
        ("judge.url", evaluator.judge and evaluator.judge.url),
        ("candidate.url", evaluator.candidate.url),
        ("incumbent.url", evaluator.incumbent.url),
    )
    return [(name, url) for name, url in named if url]


def _checks(spec: ModelRolloutSpec) -> list[tuple[int, GateCheck]]:
    return [] if spec.gate is None else list(enumerate(spec.gate.checks))


def observe_check(
    job: Object | None,
    pods: list[Object],
    problem: str | None,
    check: GateCheck,
    field: str,
    results: ResultsTarget | None,
) -> CheckObservation:
    """What a check's Job (the gate's or an evaluation run's, the check at `field`) shows, or why it
    has none; a measured check keeps only the results pointers under its own location."""
    if problem:
        return CheckFailed(problem)
    secrets = storage_secret_fields(check, field, results)
    stored = stored_url_fields(check, field, results)
    seen = observe_job(job, pods, check.timeout, check.parallelism, secrets, stored)
    return own_pointer_only(seen, results) if isinstance(seen, CheckMeasured) else seen
