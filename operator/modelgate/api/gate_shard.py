"""What one shard of a parallel evaluator check writes: counts, never shares.

What one shard of a parallel evaluator check writes (`modelgate eval --shards`): counts, never
shares, so that the operator adds the shards' counts up and scores them exactly as one Pod that ran
every item would have (core/gate_scores.py). Each index of the check's Indexed Job writes one to its
termination message."""

from __future__ import annotations

import math
from typing import Final, Literal, Self

from pydantic import Field, NonNegativeFloat, NonNegativeInt, PositiveInt, model_validator

from modelgate.api.gate_result import NO_TOKENS, ResultModel, SideTokens, TestSetIdentity, WinRate

ShardResultVersion = Literal["modelgate.io/gate-shard/v1"]
SHARD_RESULT_VERSION: Final[ShardResultVersion] = "modelgate.io/gate-shard/v1"
# An Indexed Job of more Pods would ask the model servers for more than a gate should.
MAX_SHARDS = 16
# Where the Job controller gives each Pod of an Indexed Job its index (from the Pod's label or annotation).
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
PERCENTILE = 0.95


def slowest_needed(total: int) -> int:
    """How many of the largest of `total` values hold their 95th percentile by nearest rank; as the
    count grows with `total`, a shard that keeps this many for the whole run's total keeps enough."""
    return total - math.ceil(PERCENTILE * total) + 1 if total else 0


def _at_most(counts: dict[str, int], limit: int, limit_name: str) -> None:
    """Counts of a part of `limit` things: a shard whose counts contradict each other is refused as
    it is read, so that adding shards up and scoring them never meets a negative or missing value."""
    for name, count in counts.items():
        if count > limit:
            raise ValueError(f"{name} ({count}) cannot be more than {limit_name} ({limit})")


class CapabilityCounts(ResultModel):
    """One capability's items in the shard, how many each side answered right, and how many of its
    requests failed (no answer after every retry; 0, the usual, is left out of the JSON)."""

    name: str = Field(min_length=1, max_length=63)
    items: NonNegativeInt
    candidate_passed: NonNegativeInt
    incumbent_passed: NonNegativeInt
    candidate_failed: NonNegativeInt = 0
    incumbent_failed: NonNegativeInt = 0
    candidate_tokens: SideTokens = NO_TOKENS
    incumbent_tokens: SideTokens = NO_TOKENS

    @model_validator(mode="after")
    def _parts_of_items(self) -> Self:
        # An item whose request failed has no answer to pass.
        _at_most(
            {
                "candidate_passed + candidate_failed": self.candidate_passed + self.candidate_failed,
                "incumbent_passed + incumbent_failed": self.incumbent_passed + self.incumbent_failed,
            },
            self.items,
            "items",
        )
        return self


class SideCounts(ResultModel):
    """One side's replayed requests in the shard."""

    asked: NonNegativeInt
    answered: NonNegativeInt
    refused: NonNegativeInt = Field(description="Answers that were refusals.")
    answer_chars: NonNegativeInt = Field(description="Characters of every answer, added up.")
    timed: NonNegativeInt = Field(description="Answers with a latency.")
    slowest: tuple[NonNegativeFloat, ...] = Field(
        (),
        description="The largest latencies (seconds), slowest first: as many as the 95th percentile of "
        "the whole replay can need, so that the merged percentile is exact.",
    )

    @model_validator(mode="after")
    def _parts_of_asked(self) -> Self:
        _at_most({"answered": self.answered}, self.asked, "asked")
        _at_most({"refused": self.refused, "timed": self.timed}, self.answered, "answered")
        _at_most({"len(slowest)": len(self.slowest)}, self.timed, "timed")
        if len(self.slowest) < slowest_needed(self.timed):
            raise ValueError(
                f"slowest has {len(self.slowest)} latencies; the 95th percentile of {self.timed} needs "
                f"{slowest_needed(self.timed)}"
            )
        return self


class ReplayCounts(ResultModel):
    candidate: SideCounts
    incumbent: SideCounts
    both_answered: NonNegativeInt
    changed: NonNegativeInt = Field(description="Pairs both answered whose answers differ.")

    @model_validator(mode="after")
    def _parts_of_answered(self) -> Self:
        answered = min(self.candidate.answered, self.incumbent.answered)
        _at_most({"both_answered": self.both_answered}, answered, "the fewer side's answered")
        _at_most({"changed": self.changed}, self.both_answered, "both_answered")
        return self


class ShardResult(ResultModel):
    api_version: ShardResultVersion = SHARD_RESULT_VERSION
    index: NonNegativeInt
    shards: PositiveInt = Field(le=MAX_SHARDS)
    test_set: TestSetIdentity | None = None
    capabilities: tuple[CapabilityCounts, ...] = Field(
        (), description="Every capability of the whole test set, in its order; zero counts included."
    )
    replay: ReplayCounts | None = None
    win_rate: WinRate | None = None
    tokens_left_out: bool = Field(
        False,
        description="The shard's token counts did not fit its termination message and were left out: "
        "the merged result has none (a policy that bounds tokens is then Inconclusive).",
    )
    results_url: str | None = Field(
        None,
        max_length=1100,
        description="Where this shard's own items' full results are (s3://...), when the gate keeps them.",
    )

    @model_validator(mode="after")
    def _index_of_shards(self) -> Self:
        if self.index >= self.shards:
            raise ValueError(f"index ({self.index}) must be less than shards ({self.shards})")
        return self
