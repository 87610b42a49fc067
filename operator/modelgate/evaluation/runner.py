"""One run of `modelgate eval`: read the inputs, ask both endpoints, ask the judge, score."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp
import structlog

from modelgate.api.gate_result import GateResult, Score, WinRate
from modelgate.evaluation.item_results import ItemResults
from modelgate.evaluation.judge import judge_messages, parse_verdict, question_text, tally
from modelgate.evaluation.model_client import (
    ChatClient,
    Endpoint,
    RequestPolicy,
    Sources,
    checked_session,
    read_source,
)
from modelgate.evaluation.recorded_replay import RecordedSource, read_recorded
from modelgate.evaluation.replay_set import RecordedRequest, parse_replay, seeded_sample
from modelgate.evaluation.result import gate_result
from modelgate.evaluation.scoring import Reply, capability_scores, replay_scores
from modelgate.evaluation.testset import TestSet, parse_test_set
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


@dataclass(frozen=True)
class _Pair:
    question: str
    candidate: Reply
    incumbent: Reply


async def evaluate(plan: Plan, progress: Progress, items: ItemResults | None = None) -> GateResult:
    """Raises InputError for unusable inputs and Unreachable for an endpoint that never answered.
    `items`, when given, gets every item's answers and the inputs' versions."""
    items = items if items is not None else ItemResults()
    async with checked_session(plan.sources.egress) as session:
        test_set, replay = await _inputs(session, plan, items)
        client = ChatClient(session, plan.policy, plan.sources.egress)
        endpoints = [plan.candidate, plan.incumbent, *([plan.judge] if plan.judge else [])]
        await asyncio.gather(*(client.probe(endpoint) for endpoint in endpoints))
        scores: list[Score] = []
        pairs: list[_Pair] = []
        if test_set is not None:
            scored, answered = await _test_set_scores(client, plan, test_set, progress, items)
            scores, pairs = scores + scored, pairs + answered
        if replay:
            scored, answered = await _replay_scores(client, plan, replay, progress, items)
            scores, pairs = scores + scored, pairs + answered
        win_rate = None
        if plan.judge is not None:
            win_rate = await _judged(client, plan.judge, _judged_pairs(pairs, plan), plan.seed, progress)
        identity = test_set.identity if test_set is not None else None
        return gate_result(identity, scores, win_rate, replayed=len(replay))


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
        replay = await read_recorded(plan.replay_recorded, plan.sources.egress)
    return test_set, replay or []


async def _test_set_scores(
    client: ChatClient, plan: Plan, test_set: TestSet, progress: Progress, items: ItemResults
) -> tuple[list[Score], list[_Pair]]:
    conversations = [({"role": "user", "content": item.prompt},) for item in test_set.items]
    candidate, incumbent = await _ask_both(
        client, plan, conversations, progress.phase("test set", 2 * len(conversations)), temperature=GREEDY
    )
    pairs = [
        _Pair(item.prompt, c, i) for item, c, i in zip(test_set.items, candidate, incumbent, strict=True)
    ]
    items.add_test_set(test_set.items, candidate, incumbent)
    return capability_scores(test_set.items, candidate, incumbent), pairs


async def _replay_scores(
    client: ChatClient, plan: Plan, replay: Sequence[RecordedRequest], progress: Progress, items: ItemResults
) -> tuple[list[Score], list[_Pair]]:
    done = progress.phase("replay", 2 * len(replay))
    candidate, incumbent = await _ask_both(client, plan, [r.messages for r in replay], done, recorded=replay)
    pairs = [
        _Pair(question_text(r.messages), c, i) for r, c, i in zip(replay, candidate, incumbent, strict=True)
    ]
    items.add_replay(replay, candidate, incumbent)
    return replay_scores(candidate, incumbent, RefusalPatterns.of(DEFAULT_PATTERNS)), pairs


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


def _judged_pairs(pairs: Sequence[_Pair], plan: Plan) -> list[_Pair]:
    """Pairs both models answered, `judge_samples` of them drawn with the seed (in their order)."""
    answered = [p for p in pairs if p.candidate.answered and p.incumbent.answered]
    return seeded_sample(answered, plan.judge_samples, plan.seed)


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
