"""A parallel check's shards added up (core/gate_scores.py): any split of a seeded set of answers
merges to the scores of the unsplit set, the 95th percentile latency included; shards that are not
of one run are refused naming the index."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime

import pytest

from modelgate.api.gate_result import (
    NO_TOKENS,
    CapabilityRequests,
    Requests,
    Score,
    SideRequests,
    SideTokens,
    TestSetIdentity,
)
from modelgate.api.gate_shard import CapabilityCounts, ShardResult
from modelgate.core.gate_scores import ShardsDisagree, merge_shards, merged_result, shard_scores
from modelgate.evaluator.answer_checks import ExactCheck
from modelgate.evaluator.result import shard_json
from modelgate.evaluator.scoring import (
    Reply,
    capability_counts,
    capability_scores,
    replay_counts,
    replay_scores,
)
from modelgate.evaluator.testset import Item
from modelgate.refusal_classifier import DEFAULT_PATTERNS, RefusalPatterns

IDENTITY = TestSetIdentity(name="qa", version="7", date=datetime(2026, 11, 28, tzinfo=UTC))
REFUSALS = RefusalPatterns.of(DEFAULT_PATTERNS)
CAPABILITIES = ["math", "recall", "code", "rare"]
TRIALS = 150


def reply(rng: random.Random) -> Reply:
    """Right, wrong, refused or failed, and how long it took (sometimes not timed)."""
    kind = rng.choices(["right", "wrong", "refused", "failed"], weights=[6, 3, 1, 1])[0]
    if kind == "failed":
        return Reply(None, error="HTTP 500")
    text = {"right": "yes", "wrong": "no" * rng.randint(1, 9), "refused": "I'm sorry, but I can't help."}[
        kind
    ]
    latency = None if rng.random() < 0.05 else rng.uniform(0.01, 3.0)
    tokens = None if rng.random() < 0.05 else rng.randint(0, 4000)  # some servers report no count
    return Reply(text, "stop", latency, output_tokens=tokens)


def answered_set(rng: random.Random) -> tuple[list[Item], list[Reply], list[Reply], list[Reply], list[Reply]]:
    items = [
        Item(f"i{n}", rng.choices(CAPABILITIES, weights=[10, 10, 5, 0.2])[0], "q", ExactCheck("yes"), "yes")
        for n in range(rng.randint(1, 400))
    ]
    replayed = rng.randint(1, 300)
    sides = [[reply(rng) for _ in range(count)] for count in (len(items), len(items), replayed, replayed)]
    return items, *sides  # type: ignore[return-value]


def split(count: int, rng: random.Random) -> list[list[int]]:
    """Positions 0..count-1 dealt into 1 to 16 parts at random: any split, some parts empty."""
    parts: list[list[int]] = [[] for _ in range(rng.randint(1, 16))]
    for position in range(count):
        parts[rng.randrange(len(parts))].append(position)
    return parts


def shard(
    index: int,
    shards: int,
    items: list[Item],
    test_positions: list[int],
    answers: tuple[list[Reply], list[Reply], list[Reply], list[Reply]],
    replay_positions: list[int],
) -> ShardResult:
    candidate, incumbent, replay_candidate, replay_incumbent = answers
    capabilities = list(dict.fromkeys(item.capability for item in items))
    return ShardResult(
        index=index,
        shards=shards,
        test_set=IDENTITY,
        capabilities=tuple(
            capability_counts(
                [items[p] for p in test_positions],
                [candidate[p] for p in test_positions],
                [incumbent[p] for p in test_positions],
                capabilities,
            )
        ),
        replay=replay_counts(
            [replay_candidate[p] for p in replay_positions],
            [replay_incumbent[p] for p in replay_positions],
            REFUSALS,
            len(replay_candidate),
        ),
    )


def nearest_rank_p95(replies: list[Reply]) -> float:
    """The percentile as its definition has it, independent of the code under test."""
    values = sorted(r.latency_seconds for r in replies if r.answered and r.latency_seconds is not None)
    return round(values[math.ceil(0.95 * len(values)) - 1], 4) if values else 0.0


def counted_tokens(items: list[Item], replies: list[Reply], capability: str) -> SideTokens:
    """A capability's token sums as their definition has it, independent of the code under test."""
    answered = [
        r for item, r in zip(items, replies, strict=True) if item.capability == capability and r.answered
    ]
    counts = [r.output_tokens for r in answered if r.output_tokens is not None]
    return SideTokens(tokens=sum(counts), counted=len(counts), uncounted=len(answered) - len(counts))


def answered_of(replies: list[Reply]) -> SideRequests:
    return SideRequests(asked=len(replies), answered=sum(r.text is not None for r in replies))


def requests_of(items: list[Item], answers: tuple[list[Reply], ...]) -> Requests:
    """Both sides' requests as their definition has it, independent of the code under test: per
    capability of the test set, and the test set and the replay together."""
    candidate, incumbent, replay_candidate, replay_incumbent = answers
    per_capability = [
        CapabilityRequests(
            name=name,
            **{
                side: answered_of(
                    [r for item, r in zip(items, replies, strict=True) if item.capability == name]
                )
                for side, replies in (("candidate", candidate), ("incumbent", incumbent))
            },
        )
        for name in dict.fromkeys(item.capability for item in items)
    ]
    return Requests(
        candidate=answered_of(candidate + replay_candidate),
        incumbent=answered_of(incumbent + replay_incumbent),
        capabilities=tuple(per_capability),
    )


def test_any_split_of_a_seeded_set_merges_to_the_scores_of_the_whole() -> None:
    rng = random.Random(25)
    for _ in range(TRIALS):
        items, candidate, incumbent, replay_candidate, replay_incumbent = answered_set(rng)
        answers = (candidate, incumbent, replay_candidate, replay_incumbent)
        tests, replays = split(len(items), rng), split(len(replay_candidate), rng)
        count = max(len(tests), len(replays))
        tests += [[]] * (count - len(tests))
        replays += [[]] * (count - len(replays))
        shards = [shard(i, count, items, tests[i], answers, replays[i]) for i in range(count)]

        merged = merged_result(shards)

        whole: list[Score] = capability_scores(items, candidate, incumbent)
        whole += replay_scores(replay_candidate, replay_incumbent, REFUSALS)
        assert list(merged.scores) == whole
        # In the set's order, the capabilities either side answered an item of (else no figures).
        answered = {
            i.capability
            for i, c, r in zip(items, candidate, incumbent, strict=True)
            if c.answered or r.answered
        }
        present = [c for c in dict.fromkeys(item.capability for item in items) if c in answered]
        assert [(t.name, t.candidate, t.incumbent) for t in merged.tokens] == [
            (c, counted_tokens(items, candidate, c), counted_tokens(items, incumbent, c)) for c in present
        ]
        assert merged.requests == requests_of(items, answers)
        p95 = {s.name: s for s in merged.scores}["replay-p95-latency-seconds"]
        assert (p95.candidate, p95.incumbent) == (
            nearest_rank_p95(replay_candidate),
            nearest_rank_p95(replay_incumbent),
        )


def test_one_shard_alone_scores_as_the_unsplit_run() -> None:
    rng = random.Random(7)
    items, *answers = answered_set(rng)
    alone = shard(0, 1, items, list(range(len(items))), tuple(answers), list(range(len(answers[2]))))  # type: ignore[arg-type]

    assert shard_scores(merge_shards([alone])) == shard_scores(alone)


def two_shards() -> list[ShardResult]:
    rng = random.Random(3)
    items, *answers = answered_set(rng)
    halves = [list(range(0, len(items), 2)), list(range(1, len(items), 2))]
    return [shard(i, 2, items, halves[i], tuple(answers), []) for i in range(2)]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("change", "index"),
    [
        ({"index": 0}, "shard 1 says it is shard 0"),
        ({"shards": 3}, "shard 1 says it is one of 3"),
        ({"test_set": IDENTITY.model_copy(update={"version": "8"})}, "shard 1 read another test set"),
        ({"capabilities": ()}, "shard 1 found other capabilities"),
        ({"replay": None}, "shard 1 measured other things"),
    ],
)
def test_shards_not_of_one_run_are_refused_naming_the_index(change: dict[str, object], index: str) -> None:
    first, second = two_shards()

    with pytest.raises(ShardsDisagree) as refused:
        merge_shards([first, second.model_copy(update=change)])

    assert str(refused.value).startswith(index)


def test_a_shard_whose_token_counts_do_not_fit_leaves_them_all_out_and_the_merge_has_none() -> None:
    side = SideTokens(tokens=1234567, counted=1200)
    counts = tuple(
        CapabilityCounts(
            name=f"capability-with-a-long-name-{n:03d}",
            items=1200,
            candidate_passed=1000,
            incumbent_passed=990,
            candidate_tokens=side,
            incumbent_tokens=side,
        )
        for n in range(30)
    )
    roomy, crowded = (
        ShardResult(index=i, shards=2, test_set=IDENTITY, capabilities=counts[:10] if i == 0 else counts)
        for i in range(2)
    )
    alone = ShardResult.model_validate_json(shard_json(roomy.model_copy(update={"shards": 1})))
    assert alone.capabilities == roomy.capabilities and not alone.tokens_left_out  # these fit

    read = ShardResult.model_validate_json(shard_json(crowded))

    assert read.tokens_left_out and all(c.candidate_tokens == NO_TOKENS for c in read.capabilities)
    assert [c.candidate_passed for c in read.capabilities] == [1000] * 30  # the scores' counts stay
    # Merged with a shard that kept its counts: none at all, never the sum of some shards' counts.
    merged = merged_result([roomy.model_copy(update={"capabilities": counts}), read])
    assert merged.tokens == ()
