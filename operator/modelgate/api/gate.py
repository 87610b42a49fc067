"""ModelRollout.spec.gate: the checks that judge the candidate before it gets any traffic.

ModelRollout.spec.gate: checks that judge the candidate before it gets any traffic, and the rule
that turns their verdicts into a decision (full release, canary, or reject). docs/gate.md explains it.

A check is the built-in evaluator (`modelgate eval`, run as a Job in the operator's image) or a Job
of the user's; either writes a GateResult (api/gate_result.py) that the check's policy judges.
"""

from datetime import timedelta
from typing import Annotated, Literal, Self

from pydantic import ConfigDict, Field, StringConstraints, model_validator

from modelgate.api.bounds import METRIC_BOUND, MetricBound
from modelgate.api.check_job import CheckJob, CheckResources
from modelgate.api.duration import parse_duration
from modelgate.api.errors import FieldPathError
from modelgate.api.fields import (
    Boolean,
    Duration,
    HttpUrl,
    Integer,
    MetricName,
    ModelName,
    Number,
    PositiveDuration,
)
from modelgate.api.gate_inputs import MAX_SAMPLES, JsonlSource, ReplaySource
from modelgate.api.gate_shard import MAX_SHARDS
from modelgate.api.markers import CelRule, cel_rules, list_map
from modelgate.api.object_storage import GateResults
from modelgate.api.specmodel import SpecModel
from modelgate.api.tokens_policy import CapabilityTokensRatio, TokensRatio

OnCheckError = Literal["Reject", "Inconclusive"]
MAX_CHECKS = 8
# A Job's name is at most 63 characters (its Pods' job-name label); the operator adds a prefix and a hash.
CheckName = Annotated[MetricName, StringConstraints(max_length=40)]
ProbabilityLike = Annotated[Number, Field(ge=0, le=METRIC_BOUND)]
ScoreName = Annotated[MetricName, Field(description="A score's name.")]
# A healthy server fails few requests after retries; a misconfigured or failing side fails far more.
DEFAULT_MAX_FAILED_SHARE = 0.05


class Endpoint(SpecModel):
    url: HttpUrl | None = Field(
        None,
        description="OpenAI-compatible base URL (…/v1). Defaults to the side's Service in the "
        "ModelRollout's namespace (the route's backend for it) on the Service's first port.",
    )
    model: ModelName | None = Field(
        None, description="The `model` field sent in requests; default the side's `model` or workload name."
    )


class Judge(SpecModel):
    url: HttpUrl = Field(description="OpenAI-compatible base URL (…/v1) of the judge model.")
    model: ModelName = Field(description="The judge's `model` field.")
    samples: Annotated[Integer, Field(ge=1, le=MAX_SAMPLES)] | None = Field(
        None,
        description="How many prompts to compare (both orders each), drawn with a fixed seed among all; "
        "default every prompt. A prompt one model did not answer is left out.",
    )


MEASURES_RULE = "has(self.testSet) || has(self.replay)"
MEASURES = "set testSet, replay or both: a judge compares the answers to their prompts"


class Evaluator(SpecModel):
    """The built-in evaluator, `modelgate eval` (docs/gate-eval.md), run as a Job in the operator's
    image; set testSet, replay or both (a judge compares the answers to their prompts)."""

    model_config = ConfigDict(json_schema_extra=cel_rules(CelRule(MEASURES_RULE, message=MEASURES)))

    test_set: JsonlSource | None = Field(
        None,
        description="The private test set: JSONL whose header names the set, its version and its date, "
        "then prompts with checks and capability tags; one score per capability.",
    )
    replay: ReplaySource | None = Field(
        None, description="Recorded production requests (JSONL), replayed against both models."
    )
    judge: Judge | None = Field(
        None,
        description="A blind pairwise judge: which of the two answers is better, both orders asked; the "
        "policy's winRate judges the result.",
    )
    candidate: Endpoint = Field(Endpoint(), description="Where the candidate answers.")
    incumbent: Endpoint = Field(Endpoint(), description="Where the incumbent answers.")
    concurrency: Annotated[Integer, Field(ge=1, le=256)] = Field(8, description="Requests in flight at once.")
    request_timeout: PositiveDuration = Field("30s", description="Timeout of one request to a model.")

    @model_validator(mode="after")
    def _measures_something(self) -> Self:
        if self.test_set is None and self.replay is None:
            raise ValueError(MEASURES)
        return self


class ScoreBounds(SpecModel):
    """What one named score must meet; it replaces the policy's defaults for that score."""

    name: MetricName = Field(description="The score's name in the check's result (a capability tag, ...).")
    min: MetricBound | None = Field(None, description="The candidate's value must be at least this.")
    max: MetricBound | None = Field(None, description="The candidate's value must be at most this.")
    max_drop: ProbabilityLike | None = Field(
        None,
        description="How much worse than the incumbent's value the candidate's may be (lower for "
        "higher-is-better scores, higher for lowerIsBetter ones), in the score's own units.",
    )


class WinRatePolicy(SpecModel):
    min_lower_bound: Annotated[Number, Field(ge=0, le=1)] = Field(
        description="The Wilson lower confidence bound of the candidate's win share (ties half a win) "
        "must be at least this; 0.5 means 'no worse than the incumbent, with confidence'."
    )
    confidence: Annotated[Number, Field(ge=0.5, le=0.999)] = Field(
        0.95, description="Two-sided confidence of the bound."
    )


class CheckPolicy(SpecModel):
    """How a check's result is judged. A score is Inconclusive, never a pass, with fewer samples than
    minSamples; an unnamed score is held to minScore and maxDrop."""

    min_samples: Annotated[Integer, Field(ge=1, le=MAX_SAMPLES)] = Field(
        20, description="Samples a score (or the win rate) needs before it can pass or fail."
    )
    min_score: MetricBound | None = Field(
        None,
        description="Default minimum of the candidate's higher-is-better scores (e.g. a capability's "
        "share of correct answers); scores not listed in `scores` are held to it.",
    )
    max_drop: ProbabilityLike | None = Field(
        None,
        description="Default tolerance against the incumbent for every score not listed in `scores`: how "
        "much worse the candidate's value may be. A drop past it fails, even when the average rises.",
    )
    scores: Annotated[tuple[ScoreBounds, ...], Field(max_length=32)] = Field(
        (), description="Bounds of named scores, replacing the defaults.", json_schema_extra=list_map("name")
    )
    max_failed_share: Annotated[Number, Field(ge=0, le=1)] = Field(
        DEFAULT_MAX_FAILED_SHARE,
        description="The share of a side's requests (candidate or incumbent) that may fail, with no "
        "answer after every retry, and the check still pass; exactly this share passes. A failed "
        "request scores as a wrong answer on both sides alike, so past a few the scores measure the "
        "endpoints, not the models. The default 0.05 leaves room for a healthy server's rare timeout "
        "(one of a 20-item set) and fails a side whose URL or model name is wrong or whose server is "
        "down or overloaded; 1 judges by the scores alone. A side that answered none of its requests "
        "fails the check whatever this is. A result that does not count requests (a custom check's "
        "may not) is not held to it.",
    )
    required_scores: Annotated[tuple[ScoreName, ...], Field(max_length=32)] = Field(
        (), description="Scores the result must contain; one that is missing makes the check Inconclusive."
    )
    win_rate: WinRatePolicy | None = Field(
        None, description="What the blind pairwise win rate must show; required in the result when set."
    )
    max_test_set_age: Duration | None = Field(
        None,
        description="The test set's date (in the result) may be at most this old when the check ends; "
        "a staler set fails the check.",
    )
    max_tokens_ratio: TokensRatio | None = Field(
        None,
        description="The candidate's mean output tokens per task over every capability of the result "
        "may be at most this multiple of the incumbent's (e.g. 1.5). Inconclusive when the result has "
        "no token counts, or an answer came without one, or fewer than minSamples answers were counted.",
    )
    capability_tokens_ratios: Annotated[tuple[CapabilityTokensRatio, ...], Field(max_length=32)] = Field(
        (),
        description="The same bound for single capabilities; Inconclusive for a capability whose counts "
        "are missing or incomplete.",
        json_schema_extra=list_map("name"),
    )

    def bounds(self, score: str, *, lower_is_better: bool = False) -> ScoreBounds:
        """The bounds one score is held to: its own, or the defaults (minScore only for scores where
        higher is better)."""
        named = next((bounds for bounds in self.scores if bounds.name == score), None)
        if named is not None:
            return named
        minimum = None if lower_is_better else self.min_score
        return ScoreBounds(name=score, min=minimum, max_drop=self.max_drop)


PARALLEL_RULE = "has(self.evaluator) || !has(self.parallelism) || self.parallelism == 1"
PARALLEL = "parallelism above 1 needs the built-in evaluator: a job of your own runs as one Pod"


class GateCheck(SpecModel):
    """One check: the built-in evaluator or a Job of your own, its deadline and its policy."""

    model_config = ConfigDict(
        json_schema_extra=cel_rules(
            CelRule("has(self.evaluator) != has(self.job)", message="set exactly one of evaluator or job"),
            CelRule(PARALLEL_RULE, field_path=".parallelism", message=PARALLEL),
        )
    )

    name: CheckName = Field(description="The check's name: unique, a lowercase RFC 1123 label.")
    evaluator: Evaluator | None = Field(None, description="Run the built-in evaluator.")
    job: CheckJob | None = Field(None, description="Run a container of your own.")
    timeout: PositiveDuration = Field(
        "30m", description="The Job's deadline (activeDeadlineSeconds); past it the check is an error."
    )
    parallelism: Annotated[Integer, Field(ge=1, le=MAX_SHARDS)] = Field(
        1,
        description="How many Pods share the evaluator's work, as an Indexed Job: each asks its shard "
        "of the test set and the replay (item i goes to Pod i mod parallelism), and the operator adds "
        "up their counts, so the scores are exactly those of one Pod. Each Pod gets `resources` and "
        "`evaluator.concurrency`. A failed Pod fails the check.",
    )
    on_error: OnCheckError = Field(
        "Reject",
        description="What a check that could not measure means (its Job failed, timed out, could not "
        "start, or wrote no valid result): Reject (the check fails) or Inconclusive.",
    )
    policy: CheckPolicy = Field(CheckPolicy(), description="How the check's result is judged.")
    resources: CheckResources = Field(
        CheckResources(), description="Requests and limits of the check's container."
    )

    @model_validator(mode="after")
    def _exactly_one_kind(self) -> Self:
        if (self.evaluator is None) == (self.job is None):
            raise ValueError("set exactly one of evaluator or job")
        if self.parallelism > 1 and self.evaluator is None:
            raise FieldPathError("parallelism", PARALLEL)
        return self

    @property
    def timeout_timedelta(self) -> timedelta:
        return parse_duration(self.timeout)


class FullRelease(SpecModel):
    allowed: Boolean = Field(
        False,
        description="Whether a gate whose every check passes releases the candidate in full; without it "
        "the best decision is a canary (the steps).",
    )
    start_at_step: Annotated[Integer, Field(ge=0, le=50)] | None = Field(
        None,
        description="With a full release: start the steps at this index instead of 0; without it the "
        "steps are skipped and the candidate takes all traffic.",
    )


# Beside the list-map's own uniqueness, for a message that names the rule.
UNIQUE_CHECK_NAMES = CelRule(
    "self.checks.all(c, self.checks.exists_one(o, o.name == c.name))",
    field_path=".checks",
    message="check names must be unique",
)


def unique_check_names(checks: tuple[GateCheck, ...]) -> None:
    """The validator's side of UNIQUE_CHECK_NAMES."""
    names = [check.name for check in checks]
    if len(set(names)) != len(names):
        raise FieldPathError("checks", "check names must be unique")


class GateSpec(SpecModel):
    """Checks run, one Job each, after the candidate is Available and before step 0, while it gets no
    traffic. The decision: any failed check rejects (phase Failed, reason GateRejected); every check
    passing is a full release where `full.allowed`, else a canary; a pass with any Inconclusive check is
    a canary, or with `inconclusive: Reject` a rejection."""

    model_config = ConfigDict(json_schema_extra=cel_rules(UNIQUE_CHECK_NAMES))

    checks: Annotated[tuple[GateCheck, ...], Field(min_length=1, max_length=MAX_CHECKS)] = Field(
        description="The checks; all run at once.", json_schema_extra=list_map("name")
    )
    inconclusive: Literal["Canary", "Reject"] = Field(
        "Canary",
        description="What an Inconclusive check (too few samples, a missing score) means when no check "
        "failed: a Canary at most, or Reject.",
    )
    full: FullRelease = Field(
        FullRelease(), description="Whether and how a gate that passes releases in full."
    )
    results: GateResults | None = Field(
        None,
        description="Where the built-in evaluator writes each check's full per-item results; without "
        "it only the summary and the scores are kept (in the status). A check that cannot write them "
        "could not measure.",
    )

    @model_validator(mode="after")
    def _unique_names(self) -> Self:
        unique_check_names(self.checks)
        return self
