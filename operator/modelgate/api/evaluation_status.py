"""ModelEvaluation.status: the last runs, their scores beside the baseline's, and conditions.

ModelEvaluation.status: the last runs (bounded by spec.historyLimit), newest first, each with its
scores beside the baseline's, its test set, its outcome and why; the baseline in use; conditions."""

from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any

from pydantic import Field, StringConstraints, ValidationError

from modelgate.api.bounds import Counted, Measured
from modelgate.api.errors import InvalidSpecError
from modelgate.api.evaluation_spec import MAX_HISTORY, RunId
from modelgate.api.gate import MAX_CHECKS
from modelgate.api.gate_status import Message, ShortName, TestSetVersion
from modelgate.api.markers import NULLABLE, list_map
from modelgate.api.status import Condition
from modelgate.api.statusmodel import StatusModel, Timestamp, Verdict

MAX_SCORES = 32
MAX_RUN_NOW = 253


class RunOutcome(StrEnum):
    RUNNING = "Running"
    PASSED = "Passed"
    REGRESSED = "Regressed"  # a score fell below its policy against the baseline
    FAILED = "Failed"  # the run could not judge the model: `reason` says why


class RunReason(StrEnum):
    WITHIN_POLICY = "WithinPolicy"
    BELOW_POLICY = "BelowPolicy"
    CHECK_ERROR = "CheckError"  # a check could not measure (its Job failed, a missing input, ...)
    TEST_SET_STALE = "TestSetStale"
    TEST_SET_UNDATED = "TestSetUndated"
    TOO_FEW_SAMPLES = "TooFewSamples"


class ScoreRecord(StatusModel):
    name: Annotated[str, StringConstraints(max_length=63)] = Field(description="The score's name.")
    value: Measured = Field(description="The serving model's value in this run.")
    baseline: Measured | None = Field(
        None, description="The baseline's value, when it has this score.", json_schema_extra=NULLABLE
    )
    samples: Counted = Field(description="Samples the value stands on.")
    lower_is_better: bool = Field(False, description="Whether a lower value is better.")
    verdict: Verdict = Field(description="Pass, Fail (below the policy) or Inconclusive (too few samples).")


class CheckRecord(StatusModel):
    name: Annotated[str, StringConstraints(max_length=63)] = Field(
        description="The check's name in spec.checks."
    )
    job: ShortName = Field(description="The check's Job in this run.")
    scores: Annotated[tuple[ScoreRecord, ...], Field(max_length=MAX_SCORES)] = Field(
        (), description="Each score, judged against the baseline.", json_schema_extra=list_map("name")
    )
    error: Message | None = Field(None, description="Why the check could not measure, naming the field.")


class EvaluationRun(StatusModel):
    id: RunId = Field(description="The run's start in UTC, as yyyymmddThhmmss; its Jobs are named after it.")
    started_at: Timestamp = Field(description="When it started.")
    finished_at: Timestamp | None = Field(None, description="When its outcome was reached.")
    on_demand: bool = Field(False, description="Started by the run-now annotation, not the schedule.")
    outcome: RunOutcome = Field(description="Running, Passed, Regressed or Failed.")
    reason: RunReason | None = Field(None, description="Why the outcome is what it is.")
    message: Message | None = Field(
        None, description="The outcome's reason for people, naming the score or field."
    )
    test_set: TestSetVersion | None = Field(None, description="The test set the results name.")
    storage_key: Annotated[str, StringConstraints(max_length=1100)] | None = Field(
        None,
        description="Where the run's full results are (spec.results): s3://… of the location that holds "
        "every results object its checks wrote, <url>/<namespace>/<evaluation>/<run id> (deeper when "
        "one check kept results).",
    )
    checks: Annotated[tuple[CheckRecord, ...], Field(max_length=MAX_CHECKS)] = Field(
        (), description="One entry per check.", json_schema_extra=list_map("name")
    )


class BaselineScore(StatusModel):
    check: Annotated[str, StringConstraints(max_length=63)] = Field(description="The check's name.")
    name: Annotated[str, StringConstraints(max_length=63)] = Field(description="The score's name.")
    value: Measured = Field(description="The baseline's value.")


class BaselineStatus(StatusModel):
    source: Annotated[str, StringConstraints(max_length=300)] = Field(
        description="Where the scores come from: `rollout/<name>` or `run/<id>`."
    )
    scores: Annotated[tuple[BaselineScore, ...], Field(max_length=MAX_CHECKS * MAX_SCORES)] = Field(
        (), description="The baseline's scores by check and name."
    )

    def value(self, check: str, score: str) -> float | None:
        return next((s.value for s in self.scores if (s.check, s.name) == (check, score)), None)


class ModelEvaluationStatus(StatusModel):
    observed_generation: Counted | None = Field(None, description="The metadata.generation last acted on.")
    last_schedule_time: Timestamp | None = Field(
        None, description="The last time the schedule fired and a run started (or was skipped, suspended)."
    )
    last_run_now: Annotated[str, StringConstraints(max_length=MAX_RUN_NOW)] | None = Field(
        None,
        description="The value of the modelgate.io/run-now annotation last acted on (a sha256 digest "
        "of a longer one).",
    )
    last_outcome: RunOutcome | None = Field(None, description="The newest finished run's outcome.")
    last_run_time: Timestamp | None = Field(None, description="When the newest run started.")
    baseline: BaselineStatus | None = Field(None, description="The baseline in use.")
    runs: Annotated[tuple[EvaluationRun, ...], Field(max_length=MAX_HISTORY)] = Field(
        (), description="The last runs, newest first (spec.historyLimit).", json_schema_extra=list_map("id")
    )
    conditions: Annotated[tuple[Condition, ...], Field(max_length=8)] = Field(
        (), description="Ready and Regressed.", json_schema_extra=list_map("type")
    )

    def run(self, run_id: str) -> EvaluationRun | None:
        return next((run for run in self.runs if run.id == run_id), None)


def parse_evaluation_status(status: Mapping[str, Any]) -> ModelEvaluationStatus:
    try:
        return ModelEvaluationStatus.model_validate(status)
    except ValidationError as error:
        raise InvalidSpecError.from_validation_error(error, root="status") from None
