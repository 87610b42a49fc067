"""ModelRollout.status.gate: the evaluation gate's evidence, kept on the resource.

ModelRollout.status.gate: the evidence of the evaluation gate, kept on the resource: every check's
scores beside the policy they were held to, each verdict and why, the test set's version, the decision."""

from enum import StrEnum
from typing import Annotated

from pydantic import Field, StringConstraints

from modelgate.api.bounds import Counted, Measured
from modelgate.api.gate_shard import MAX_SHARDS
from modelgate.api.markers import NULLABLE, list_map
from modelgate.api.statusmodel import StatusModel, Timestamp, Verdict

Message = Annotated[str, StringConstraints(max_length=1024)]
ShortName = Annotated[str, StringConstraints(max_length=253)]


class GateDecision(StrEnum):
    FULL = "Full"
    CANARY = "Canary"
    REJECT = "Reject"


class CheckState(StrEnum):
    RUNNING = "Running"
    MEASURED = "Measured"  # its result was read and judged
    ERROR = "Error"  # it could not measure: the Job failed, timed out, could not start, or wrote no result


class ScoreVerdict(StatusModel):
    """One score of a check's result, the bounds it was held to, and its verdict."""

    name: Annotated[str, StringConstraints(max_length=63)] = Field(description="The score's name.")
    candidate: Measured = Field(description="The candidate's value.")
    incumbent: Measured | None = Field(
        None, description="The incumbent's value on the same samples.", json_schema_extra=NULLABLE
    )
    samples: Counted = Field(description="Samples the value stands on.")
    lower_is_better: bool = Field(
        False, description="Whether a lower value is better (error rates, latencies)."
    )
    min: Measured | None = Field(None, description="The minimum it was held to.")
    max: Measured | None = Field(None, description="The maximum it was held to.")
    max_drop: Measured | None = Field(None, description="The tolerance against the incumbent it was held to.")
    verdict: Verdict = Field(description="Pass, Fail or Inconclusive (too few samples).")
    message: Message = Field(description="Why, naming the value and the bound.")


class WinRateVerdict(StatusModel):
    wins: Counted = Field(description="Prompts on which the judge preferred the candidate.")
    ties: Counted = Field(description="Ties, and prompts whose two orders disagreed.")
    losses: Counted = Field(description="Prompts on which it preferred the incumbent.")
    share: Measured = Field(description="The candidate's win share, ties counted as half a win.")
    lower_bound: Measured = Field(description="The Wilson lower confidence bound of the share.")
    confidence: Measured = Field(description="The bound's two-sided confidence.")
    min_lower_bound: Measured = Field(description="What the policy asked of the bound.")
    verdict: Verdict = Field(description="Pass, Fail or Inconclusive (too few comparisons).")
    message: Message = Field(description="Why.")


class TokensPerTask(StatusModel):
    """Both sides' mean output tokens per task (usage.completion_tokens per answer) and, where the
    policy bounds it, the ratio's verdict."""

    candidate: Measured | None = Field(
        None, description="The candidate's mean; null when no answer had a count.", json_schema_extra=NULLABLE
    )
    incumbent: Measured | None = Field(
        None, description="The incumbent's mean; null when no answer had a count.", json_schema_extra=NULLABLE
    )
    candidate_counted: Counted = Field(description="The candidate's answers counted.")
    incumbent_counted: Counted = Field(description="The incumbent's answers counted.")
    uncounted: Counted = Field(0, description="Answers of either side that came without a token count.")
    ratio: Measured | None = Field(None, description="candidate / incumbent, when both are known.")
    max_ratio: Measured | None = Field(None, description="The most the policy allows the ratio.")
    verdict: Verdict | None = Field(
        None, description="Pass, Fail or Inconclusive, where the policy bounds it."
    )
    message: Message | None = Field(None, description="Why, where the policy bounds it.")


class CapabilityTokensPerTask(TokensPerTask):
    """Tokens per task on one capability's items."""

    name: Annotated[str, StringConstraints(max_length=63)] = Field(description="The capability.")


class SideRequestCounts(StatusModel):
    """One side's requests: asked, answered (HTTP 200 with a chat completion, after every retry),
    and failed (the rest)."""

    asked: Counted = Field(description="Requests the check sent this side.")
    answered: Counted = Field(description="Of them, those answered.")
    failed: Counted = Field(description="Of them, those that got no answer.")


class CapabilityRequestCounts(StatusModel):
    """Both sides' requests for one capability's items."""

    name: Annotated[str, StringConstraints(max_length=63)] = Field(description="The capability.")
    candidate: SideRequestCounts = Field(description="The candidate's requests.")
    incumbent: SideRequestCounts = Field(description="The incumbent's requests.")


class RequestsVerdict(StatusModel):
    """Both sides' requests over the check and per capability, held to the policy's maxFailedShare."""

    candidate: SideRequestCounts = Field(description="The candidate's requests.")
    incumbent: SideRequestCounts = Field(description="The incumbent's requests.")
    capabilities: Annotated[tuple[CapabilityRequestCounts, ...], Field(max_length=64)] = Field(
        (),
        description="Per capability of the test set, where the result had them.",
        json_schema_extra=list_map("name"),
    )
    max_failed_share: Annotated[float, Field(ge=0, le=1)] = Field(
        description="The share of failed requests the policy allows."
    )
    verdict: Verdict = Field(
        description="Fail when a side answered nothing or failed more than the policy allows; else Pass."
    )
    message: Message = Field(description="Why, naming the side and its counts.")


class TestSetVersion(StatusModel):
    __test__ = False  # not a pytest class

    name: ShortName = Field(description="The test set's name.")
    version: Annotated[str, StringConstraints(max_length=128)] = Field(description="Its version.")
    date: Timestamp = Field(description="When it was last refreshed.")


class CheckStatus(StatusModel):
    """One check of spec.gate: its Job, its state, its evidence and its verdict."""

    name: Annotated[str, StringConstraints(max_length=63)] = Field(
        description="The check's name in spec.gate."
    )
    job: ShortName = Field(description="The name of the check's Job.")
    state: CheckState = Field(
        description="Running, Measured (its result was judged) or Error (it could not measure)."
    )
    verdict: Verdict | None = Field(None, description="Pass, Fail or Inconclusive, once it is known.")
    message: Message | None = Field(None, description="The verdict's reason, or what the check waits for.")
    test_set: TestSetVersion | None = Field(None, description="The test set the result names.")
    scores: Annotated[tuple[ScoreVerdict, ...], Field(max_length=32)] = Field(
        (), description="Each score of the result, judged.", json_schema_extra=list_map("name")
    )
    win_rate: WinRateVerdict | None = Field(None, description="The pairwise win rate, judged.")
    requests: RequestsVerdict | None = Field(
        None,
        description="Both sides' requests asked, answered and failed, judged; absent when the "
        "result (a custom check's) does not count them.",
    )
    tokens: Annotated[tuple[CapabilityTokensPerTask, ...], Field(max_length=64)] = Field(
        (),
        description="Output tokens per task of both sides, per capability.",
        json_schema_extra=list_map("name"),
    )
    overall_tokens: TokensPerTask | None = Field(
        None, description="Output tokens per task of both sides over every capability."
    )
    summary: Message | None = Field(None, description="The check's own one-line summary.")
    results_urls: Annotated[
        tuple[
            Annotated[str, StringConstraints(max_length=1100), Field(description="One results object.")], ...
        ],
        Field(max_length=MAX_SHARDS),
    ] = Field(
        (),
        description="Where the check's full per-item results are (s3://...), when spec.gate.results "
        "keeps them: <url>/<namespace>/<rollout>/<gate run>/<check>/<test-set version>/results.jsonl, "
        "or for a check in N Pods (parallelism) one object per shard, results-<index>-of-<N>.jsonl, "
        "in index order.",
    )
    finished_at: Timestamp | None = Field(None, description="When its verdict was reached.")


class GateStatus(StatusModel):
    """The evaluation gate of this rollout (spec.gate)."""

    started_at: Timestamp = Field(description="When the checks were started.")
    run: Annotated[str, StringConstraints(max_length=63)] = Field(
        description="Identifies this run of the gate: the checks' Jobs are named after it, so a restarted "
        "operator finds them rather than starting them again."
    )
    checks: Annotated[tuple[CheckStatus, ...], Field(max_length=8)] = Field(
        (), description="One entry per check of spec.gate.", json_schema_extra=list_map("name")
    )
    decision: GateDecision | None = Field(
        None, description="Full, Canary or Reject, once every check has a verdict (or by a command)."
    )
    decided_at: Timestamp | None = Field(None, description="When the decision was made.")
    message: Message | None = Field(None, description="Why the decision is what it is.")

    def check(self, name: str) -> CheckStatus | None:
        return next((check for check in self.checks if check.name == name), None)
