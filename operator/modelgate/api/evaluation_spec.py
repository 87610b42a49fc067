"""ModelEvaluation.spec: the serving model re-evaluated on a schedule with the gate's checks and
policies (api/gate.py), against a baseline. docs/continuous-evaluation.md explains it."""

from collections.abc import Mapping
from typing import Annotated, Any, Self

from pydantic import AfterValidator, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from modelgate.api.cron import SCHEDULE_HELP, SCHEDULE_PATTERN, parse_schedule
from modelgate.api.errors import FieldPathError, InvalidSpecError
from modelgate.api.fields import RUN_ID_PATTERN, Boolean, Duration, HttpUrl, Integer, ModelName, ObjectName
from modelgate.api.gate import MAX_CHECKS, UNIQUE_CHECK_NAMES, GateCheck, unique_check_names
from modelgate.api.markers import CelRule, cel_rules, list_map
from modelgate.api.object_storage import GateResults
from modelgate.api.specmodel import SpecModel

# Runs kept in status: 20 runs of 8 checks of 32 scores stay well inside etcd's object size.
MAX_HISTORY = 20
ONE_TARGET = "set exactly one of deployment, inferencePool or url (an inferencePool with its url)"


def _parses_as_schedule(text: str) -> str:
    parse_schedule(text)
    return text


CronSchedule = Annotated[
    str,
    StringConstraints(min_length=1, max_length=128),
    AfterValidator(_parses_as_schedule),
    Field(json_schema_extra=cel_rules(CelRule(f"self.matches('{SCHEDULE_PATTERN}')", message=SCHEDULE_HELP))),
]
RunId = Annotated[str, StringConstraints(max_length=15, pattern=RUN_ID_PATTERN)]


class ServingModel(SpecModel):
    """The model in service: a Deployment (reached through the Service of its name), an InferencePool
    (give its url) or a URL; set exactly one of deployment, inferencePool or url."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule(
                "has(self.deployment) != (has(self.inferencePool) || has(self.url))",
                message=ONE_TARGET,
            ),
            CelRule("!has(self.inferencePool) || has(self.url)", message="an inferencePool needs its url"),
        )
    )

    deployment: ObjectName | None = Field(
        None, description="A Deployment in the namespace, reached through the Service of the same name."
    )
    inference_pool: ObjectName | None = Field(
        None, alias="inferencePool", description="An InferencePool in the namespace; set url too."
    )
    url: HttpUrl | None = Field(None, description="OpenAI-compatible base URL (…/v1) of the model.")
    model: ModelName | None = Field(
        None, description="The `model` field sent in requests; default the workload's name."
    )

    @model_validator(mode="after")
    def _one_target(self) -> Self:
        if self.inference_pool is not None and self.url is None:
            raise ValueError("an inferencePool needs its url")
        if (self.deployment is None) == (self.inference_pool is None and self.url is None):
            raise ValueError(ONE_TARGET)
        return self

    @property
    def name(self) -> str:
        return self.model or self.deployment or self.inference_pool or "model"


class PromotedBaseline(SpecModel):
    rollout: ObjectName = Field(
        description="A ModelRollout in the namespace that promoted this model: its gate's scores "
        "(status.gate) are the baseline."
    )


class RunBaseline(SpecModel):
    id: RunId = Field(description="A run of this evaluation (status.runs[].id): its scores are the baseline.")


class Baseline(SpecModel):
    """What each run's scores are compared with (the policy's maxDrop); set exactly one."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule("has(self.promoted) != has(self.run)", message="set exactly one of promoted or run")
        )
    )

    promoted: PromotedBaseline | None = Field(
        None, description="The scores recorded when a rollout promoted the model."
    )
    run: RunBaseline | None = Field(None, description="A fixed earlier run of this evaluation.")

    @model_validator(mode="after")
    def _exactly_one(self) -> Self:
        if (self.promoted is None) == (self.run is None):
            raise ValueError("set exactly one of promoted or run")
        return self


# The serving model answers as both sides: a ratio of its tokens to its own would always pass.
NO_TOKENS_RATIOS = (
    "a ModelEvaluation compares no two models: maxTokensRatio and capabilityTokensRatios are for a gate"
)
NO_TOKENS_RATIOS_RULE = CelRule(
    "self.checks.all(c, !has(c.policy) || !has(c.policy.maxTokensRatio) &&"
    " (!has(c.policy.capabilityTokensRatios) || size(c.policy.capabilityTokensRatios) == 0))",
    field_path=".checks",
    message=NO_TOKENS_RATIOS,
)


class ModelEvaluationSpec(SpecModel):
    model_config = ConfigDict(json_schema_extra=cel_rules(UNIQUE_CHECK_NAMES, NO_TOKENS_RATIOS_RULE))

    model: ServingModel = Field(description="The model in service, which every run evaluates.")
    checks: Annotated[tuple[GateCheck, ...], Field(min_length=1, max_length=MAX_CHECKS)] = Field(
        description="The gate's checks (ModelRollout spec.gate.checks); the serving model answers as both "
        "candidate and incumbent, and the baseline stands for the incumbent in maxDrop.",
        json_schema_extra=list_map("name"),
    )
    schedule: CronSchedule = Field(description=f"When runs start, in UTC: {SCHEDULE_HELP}.")
    max_test_set_age: Duration | None = Field(
        None,
        description="A run whose test set (its header's date) is older than this fails (TestSetStale); "
        "with it set, a result naming no test set fails too (TestSetUndated).",
    )
    baseline: Baseline | None = Field(
        None, description="What runs are compared with; without one, only the policies' min and max apply."
    )
    suspend: Boolean = Field(False, description="Start no scheduled run (an on-demand run still starts).")
    results: GateResults | None = Field(
        None,
        description="Where each run's checks keep their full per-item results: "
        "<url>/<namespace>/<evaluation>/<run id>/<check>/<test-set version>/results.jsonl "
        "(docs/object-storage.md); the run's storageKey points at them.",
    )
    history_limit: Annotated[Integer, Field(ge=1, le=MAX_HISTORY)] = Field(
        10, description="How many runs status.runs keeps, newest first; older runs' Jobs are deleted."
    )

    @model_validator(mode="after")
    def _unique_names(self) -> Self:
        unique_check_names(self.checks)
        if any(c.policy.max_tokens_ratio or c.policy.capability_tokens_ratios for c in self.checks):
            raise FieldPathError("checks", NO_TOKENS_RATIOS)
        return self


def parse_evaluation_spec(spec: Mapping[str, Any]) -> ModelEvaluationSpec:
    """InvalidSpecError lists each problem as `spec.<path>: <reason>`."""
    try:
        return ModelEvaluationSpec.model_validate(spec)
    except ValidationError as error:
        raise InvalidSpecError.from_validation_error(error, root="spec") from None
