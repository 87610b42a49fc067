"""What a gate check writes when it ends: the GateResult the operator reads back.

What a gate check writes when it ends: the JSON that `modelgate eval` and a user's own check Job
produce and the operator reads back (from the check Pod's termination message). docs/gate.md documents
it for authors of custom checks."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Final, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, NonNegativeInt, field_validator, model_validator
from pydantic.alias_generators import to_camel

from modelgate.api.fields import Number

GateResultVersion = Literal["modelgate.io/gate-result/v1"]
GATE_RESULT_VERSION: Final[GateResultVersion] = "modelgate.io/gate-result/v1"
# The kubelet keeps at most this much of a container's termination message.
TERMINATION_MESSAGE_LIMIT = 4096
# A check that exits with this code measured, and a side answered none of its requests: its result
# is judged (and fails), not taken for a check that could not measure (`modelgate eval` exits so).
NO_ANSWER_EXIT_CODE = 8


class StoredData(StrEnum):
    """What an evaluator reads from or writes to object storage: which one failed names the field of
    the spec that points at it (the operator knows the field; the evaluator knows its option)."""

    TEST_SET = "testSet"
    REPLAY = "replay"
    RECORDED = "recorded"
    RESULTS = "results"


class ResultModel(BaseModel):
    # Unknown fields are refused so that a misspelt key is an error, not a silently missing score.
    model_config = ConfigDict(frozen=True, populate_by_name=True, alias_generator=to_camel, extra="forbid")


class TestSetIdentity(ResultModel):
    __test__ = False  # not a pytest class

    name: str = Field(min_length=1, max_length=253)
    version: str = Field(min_length=1, max_length=128)
    date: datetime = Field(description="When the set was last refreshed (RFC 3339, with a time zone).")


class Score(ResultModel):
    """One measured quantity of the candidate, beside the incumbent's on the same samples when the check
    compares them: a capability's share of correct answers, or a replay figure such as an error rate."""

    name: str = Field(
        min_length=1,
        max_length=63,
        description="A capability tag of the test set (e.g. `math`), or a replay figure "
        "(`replay-error-rate`, `replay-refusal-rate`, `replay-p95-latency-seconds`, "
        "`replay-mean-answer-chars`, `replay-changed-answers`), or any name a custom check chooses.",
    )
    candidate: Number
    incumbent: Number | None = None
    samples: NonNegativeInt = Field(description="How many samples the candidate's value stands on.")
    lower_is_better: bool = Field(
        False, description="True for figures such as error rates and latencies: a drop is then a rise."
    )


class WinRate(ResultModel):
    """A blind pairwise comparison: per prompt, a judge preferred the candidate (win), the incumbent
    (loss), or neither or disagreed with itself across the two orders (tie)."""

    wins: NonNegativeInt
    ties: NonNegativeInt
    losses: NonNegativeInt
    judge: str | None = Field(None, max_length=253, description="The judge model, for the record.")

    @property
    def samples(self) -> int:
        return self.wins + self.ties + self.losses


# An answer's reported count above this is not a count (the longest context windows are ~10M tokens).
MAX_ANSWER_TOKENS = 2**31 - 1
# Sums stay exact as floats, so a mean never overflows (a custom check's JSON is the tenant's).
MAX_TOKEN_SUM = 2**53


class SideTokens(ResultModel):
    """One side's output tokens (`usage.completion_tokens`) added up over its answers whose count the
    server reported; answers without a count are `uncounted`, never counted as 0. Sums, not means, so
    that the shards of a parallel check add up exactly."""

    tokens: NonNegativeInt = Field(le=MAX_TOKEN_SUM, description="Output tokens of the counted answers.")
    counted: NonNegativeInt = Field(
        le=MAX_TOKEN_SUM, description="Answers whose output tokens were reported."
    )
    uncounted: NonNegativeInt = Field(0, le=MAX_TOKEN_SUM, description="Answers without a token count.")

    @property
    def per_task(self) -> float | None:
        """The mean output tokens of an answer; None when no answer was counted."""
        return self.tokens / self.counted if self.counted else None

    def __add__(self, other: SideTokens) -> SideTokens:
        return SideTokens(
            tokens=self.tokens + other.tokens,
            counted=self.counted + other.counted,
            uncounted=self.uncounted + other.uncounted,
        )


NO_TOKENS = SideTokens(tokens=0, counted=0)


class CapabilityTokens(ResultModel):
    """Output tokens per task of one capability's items, for both sides on the same items."""

    name: str = Field(min_length=1, max_length=63, description="The capability tag (as its score's name).")
    candidate: SideTokens
    incumbent: SideTokens


class SideRequests(ResultModel):
    """One side's requests to its model: how many the check asked, and how many of them were answered
    (HTTP 200 with a chat completion, after every retry); the others failed."""

    asked: NonNegativeInt
    answered: NonNegativeInt

    @model_validator(mode="after")
    def _answered_of_asked(self) -> Self:
        if self.answered > self.asked:
            raise ValueError(f"answered ({self.answered}) cannot be more than asked ({self.asked})")
        return self

    @property
    def failed(self) -> int:
        return self.asked - self.answered

    def __add__(self, other: SideRequests) -> SideRequests:
        return SideRequests(asked=self.asked + other.asked, answered=self.answered + other.answered)


NO_REQUESTS = SideRequests(asked=0, answered=0)


class CapabilityRequests(ResultModel):
    """Both sides' requests for one capability's items."""

    name: str = Field(min_length=1, max_length=63, description="The capability tag (as its score's name).")
    candidate: SideRequests
    incumbent: SideRequests


class Requests(ResultModel):
    """Both sides' requests over the whole check (test-set items and replayed requests; the judge's
    asks are not counted here), and per capability of the test set where they fit."""

    candidate: SideRequests
    incumbent: SideRequests
    capabilities: tuple[CapabilityRequests, ...] = Field(
        (),
        max_length=64,
        description="The test set's items per capability; left out when the result would not fit "
        "its termination message.",
    )

    @model_validator(mode="after")
    def _capabilities_within_totals(self) -> Self:
        names = [entry.name for entry in self.capabilities]
        if len(set(names)) != len(names):
            raise ValueError("capabilities: each capability at most once")
        for side in ("candidate", "incumbent"):
            total: SideRequests = getattr(self, side)
            parts = sum((getattr(entry, side) for entry in self.capabilities), NO_REQUESTS)
            if parts.asked > total.asked or parts.failed > total.failed:
                raise ValueError(f"capabilities: the {side}'s counts add up to more than its totals")
        return self


class GateResult(ResultModel):
    api_version: GateResultVersion = GATE_RESULT_VERSION
    test_set: TestSetIdentity | None = None
    scores: tuple[Score, ...] = ()
    win_rate: WinRate | None = None
    summary: str | None = Field(None, max_length=1024, description="One line for people.")
    tokens: tuple[CapabilityTokens, ...] = Field(
        (), max_length=64, description="Output tokens per task, per capability, of both sides."
    )
    requests: Requests | None = Field(
        None,
        description="How many requests each side was asked and answered; a policy bounds the share "
        "that failed (maxFailedShare). A custom check may leave it out.",
    )
    results_url: str | None = Field(
        None,
        max_length=1100,
        description="Where the check's full per-item results are (s3://...), when the gate keeps them.",
    )
    storage_failure: StoredData | None = Field(
        None,
        description="Which stored input or output could not be read or written, when that is why "
        "the check could not measure.",
    )

    @field_validator("tokens")
    @classmethod
    def _one_entry_per_capability(cls, tokens: tuple[CapabilityTokens, ...]) -> tuple[CapabilityTokens, ...]:
        names = [entry.name for entry in tokens]
        if len(set(names)) != len(names):
            raise ValueError("each capability at most once")
        return tokens
