"""One run of `modelgate eval`: read the inputs, ask both endpoints, ask the judge, score."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp
import structlog

from modelgate.api.gate_result import GateResult, WinRate
from modelgate.api.gate_shard import CapabilityCounts, ReplayCounts, ShardResult
from modelgate.core.gate_scores import shard_requests, shard_scores, shard_tokens
from modelgate.egress import checked_aiohttp_session
from modelgate.evaluator.item_results import ItemResults
from modelgate.evaluator.model_client import (
    ChatClient,
    Endpoint,
    RequestPolicy,
    Sources,
    read_source,
)
from modelgate.evaluator.pairwise_judge import judge_messages, parse_verdict, question_text, tally
from modelgate.evaluator.recorded_replay import RecordedSource, read_recorded
from modelgate.evaluator.replay_set import RecordedRequest, parse_replay, seeded_sample
from modelgate.evaluator.result import gate_result
from modelgate.evaluator.scoring import Reply, capability_counts, replay_counts
from modelgate.evaluator.testset import TestSet, parse_test_set
from modelgate.refusal_classifier import DEFAULT_PATTERNS, RefusalPatterns

log = structlog.get_logger(__name__)

Messages = tuple[dict[str, Any], ...]
# Test-set items and judge asks are sampled at temperature 0: reruns of a set should agree.
GREEDY = 0.0


class Progress(Protocol):
    def phase(self, description: str, total: int) -> Callable[[], None]:
        """Starts a phase of `total` requests; the returned function counts one as done."""


class NoProgress:
    def phase(self, description: str, total: int) -> Callable[[], None]:
        return lambda: None


@dataclass(frozen=True)
class Shard:
    """Which part of the run this process does: the items at positions `index`, `index + count`, ...
    of the test set and of the (already sampled) replay, and the judge's picks among them."""

    index: int = 0
    count: int = 1

    def picks(self, position: int) -> bool:
        return position % self.count == self.index


@dataclass(frozen=True)
class Plan:
    candidate: Endpoint
    incumbent: Endpoint
    policy: RequestPolicy
    sources: Sources  # where requests may go, and files come from
    test_set: str | None = None
    replay: str | None = None
    replay_sample: int | None = None
    replay_recorded: RecordedSource | None = None  # instead of `replay`: the newest recorded requests
    judge: Endpoint | None = None
    judge_samples: int | None = None
    seed: int = 0
    shard: Shard = Shard()


@dataclass(frozen=True)
class _Pair:
    position: int  # in the whole run: the test set's items, then the replay's requests
    question: str
    candidate: Reply
    incumbent: Reply


async def evaluate(plan: Plan, progress: Progress, items: ItemResults | None = None) -> GateResult:
    """The whole run's result (`plan.shard` is the whole run); raises as evaluate_shard does."""
    counted = await evaluate_shard(plan, progress, items)
    replayed = 0 if counted.replay is None else counted.replay.candidate.asked
    return gate_result(
        counted.test_set,
        shard_scores(counted),
        counted.win_rate,
        replayed=replayed,
        tokens=shard_tokens(counted),
        requests=shard_requests(counted),
    )


async def evaluate_shard(plan: Plan, progress: Progress, items: ItemResults | None = None) -> ShardResult:
    """The counts of `plan.shard`'s part of the run. Every shard reads the whole inputs and samples
    them the same way (the replay's `replay_sample`, the judge's `judge_samples`, over the whole run),
    then asks only its own part. Raises InputError for unusable inputs and Unreachable for an endpoint
    that never answered. `items`, when given, gets this shard's items' answers and the inputs' versions."""
    items = items if items is not None else ItemResults()
    async with checked_aiohttp_session(plan.sources.egress) as session:
        test_set, replay = await _inputs(session, plan, items)
        client = ChatClient(session, plan.policy, plan.sources.egress)
        endpoints = [plan.candidate, plan.incumbent, *([plan.judge] if plan.judge else [])]
        await asyncio.gather(*(client.probe(endpoint) for endpoint in endpoints))
        capabilities: list[CapabilityCounts] = []
        replayed = None
        pairs: list[_Pair] = []
        if test_set is not None:
            capabilities, answered = await _test_set_counts(client, plan, test_set, progress, items)
            pairs += answered
        if replay:
            first = 0 if test_set is None else len(test_set.items)
            replayed, answered = await _replay_counts(client, plan, replay, first, progress, items)
            pairs += answered
        win_rate = None
        if plan.judge is not None:
            everything = (0 if test_set is None else len(test_set.items)) + len(replay)
            judged = _judged_pairs(pairs, everything, plan)
            win_rate = await _judged(client, plan.judge, judged, plan.seed, progress)
        return ShardResult(
            index=plan.shard.index,
            shards=plan.shard.count,
            test_set=None if test_set is None else test_set.identity,
            capabilities=tuple(capabilities),
            replay=replayed,
            win_rate=win_rate,
        )


async def _inputs(
    session: aiohttp.ClientSession, plan: Plan, items: ItemResults
) -> tuple[TestSet | None, list[RecordedRequest]]:
    timeout = plan.policy.timeout_seconds
    test_set = replay = None
    if plan.test_set is not None:
        text = await read_source(session, plan.test_set, "--test-set", timeout, plan.sources)
        items.read("testSet", plan.test_set, text)
        test_set = parse_test_set(text, plan.test_set)
    if plan.replay is not None:
        text = await read_source(session, plan.replay, "--replay", timeout, plan.sources)
        items.read("replay", plan.replay, text)
        recorded = parse_replay(text, plan.replay)
        replay = seeded_sample(recorded, plan.replay_sample, plan.seed)
    if plan.replay_recorded is not None:
        replay = await read_recorded(plan.replay_recorded, plan.sources.egress, plan.sources.environ)
    return test_set, replay or []


async def _test_set_counts(
    client: ChatClient, plan: Plan, test_set: TestSet, progress: Progress, items: ItemResults
) -> tuple[list[CapabilityCounts], list[_Pair]]:
    mine = [(p, item) for p, item in enumerate(test_set.items) if plan.shard.picks(p)]
    conversations = [({"role": "user", "content": item.prompt},) for _, item in mine]
    candidate, incumbent = await _ask_both(
        client, plan, conversations, progress.phase("test set", 2 * len(conversations)), temperature=GREEDY
    )
    pairs = [_Pair(p, item.prompt, c, i) for (p, item), c, i in zip(mine, candidate, incumbent, strict=True)]
    asked = [item for _, item in mine]
    items.add_test_set(asked, candidate, incumbent)
    return capability_counts(asked, candidate, incumbent, test_set.capabilities()), pairs


async def _replay_counts(
    client: ChatClient,
    plan: Plan,
    replay: Sequence[RecordedRequest],
    first: int,
    progress: Progress,
    items: ItemResults,
) -> tuple[ReplayCounts, list[_Pair]]:
    """`first`: the position of the replay's first request in the whole run."""
    mine = [(p, request) for p, request in enumerate(replay) if plan.shard.picks(p)]
    requests = [request for _, request in mine]
    done = progress.phase("replay", 2 * len(requests))
    candidate, incumbent = await _ask_both(
        client, plan, [r.messages for r in requests], done, recorded=requests
    )
    pairs = [
        _Pair(first + p, question_text(r.messages), c, i)
        for (p, r), c, i in zip(mine, candidate, incumbent, strict=True)
    ]
    items.add_replay(requests, candidate, incumbent)
    refusals = RefusalPatterns.of(DEFAULT_PATTERNS)
    return replay_counts(candidate, incumbent, refusals, len(replay)), pairs


async def _ask_both(
    client: ChatClient,
    plan: Plan,
    conversations: Sequence[Messages],
    done: Callable[[], None],
    *,
    recorded: Sequence[RecordedRequest] | None = None,
    temperature: float | None = None,
) -> tuple[list[Reply], list[Reply]]:
    """Every conversation to both endpoints, all at once (each endpoint bounds its own concurrency).
    A recorded request keeps its max_tokens and its streaming, and its model where the endpoint
    names none."""

    async def ask(endpoint: Endpoint, index: int) -> Reply:
        request = recorded[index] if recorded is not None else None
        reply = await client.complete(
            endpoint,
            conversations[index],
            model=endpoint.model or (request.model if request else None),
            max_tokens=request.max_tokens if request else None,
            temperature=temperature,
            stream=request.stream if request else False,
        )
        done()
        return reply

    sides = [
        [ask(endpoint, i) for i in range(len(conversations))] for endpoint in (plan.candidate, plan.incumbent)
    ]
    candidate, incumbent = await asyncio.gather(*(asyncio.gather(*side) for side in sides))
    for endpoint, replies in ((plan.candidate, candidate), (plan.incumbent, incumbent)):
        _warn_of_failures(endpoint, replies)
    return list(candidate), list(incumbent)


def _warn_of_failures(endpoint: Endpoint, replies: Sequence[Reply]) -> None:
    """Failed requests score as wrong answers; say so, or a misconfigured endpoint (a missing model
    name answered 404) would quietly fail a good model."""
    failed = [reply.error for reply in replies if reply.error is not None]
    if failed:
        log.warning(
            "requests failed after every retry; each scores as a wrong answer",
            endpoint=endpoint.role,
            failed=len(failed),
            asked=len(replies),
            first_error=failed[0],
        )


def _judged_pairs(pairs: Sequence[_Pair], everything: int, plan: Plan) -> list[_Pair]:
    """The pairs of `judge_samples` positions drawn with the seed among all `everything` of the run
    (so every shard draws the same), those of this shard that both models answered."""
    drawn = set(seeded_sample(range(everything), plan.judge_samples, plan.seed))
    return [p for p in pairs if p.position in drawn and p.candidate.answered and p.incumbent.answered]


async def _judged(
    client: ChatClient, judge: Endpoint, pairs: Sequence[_Pair], seed: int, progress: Progress
) -> WinRate:
    """Both orders of every pair, asked in a shuffled sequence so that no run of asks puts the
    candidate in one position; a pair whose two verdicts are not both readable is left out."""
    asks = [(index, candidate_first) for index in range(len(pairs)) for candidate_first in (True, False)]
    random.Random(seed).shuffle(asks)
    done = progress.phase("judge", len(asks))

    async def ask(index: int, candidate_first: bool) -> Reply:
        pair = pairs[index]
        first, second = (
            (pair.candidate, pair.incumbent) if candidate_first else (pair.incumbent, pair.candidate)
        )
        messages = judge_messages(pair.question, first.text or "", second.text or "")
        reply = await client.complete(judge, messages, temperature=GREEDY)
        done()
        return reply

    replies = await asyncio.gather(*(ask(index, first) for index, first in asks))
    verdicts = {key: parse_verdict(reply.text or "") for key, reply in zip(asks, replies, strict=True)}
    win_rate, left_out = tally(
        [(verdicts[(i, True)], verdicts[(i, False)]) for i in range(len(pairs))], judge.model
    )
    if left_out:
        log.warning(
            "pairs left out of the win rate: a judge ask failed or its verdict was unreadable",
            left_out=left_out,
            judged=win_rate.samples,
        )
    return win_rate
