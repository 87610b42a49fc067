"""The model-server double answering like a model version of a configured quality, and as a judge."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import aiohttp
import pytest

from modelgate.evaluator.pairwise_judge import judge_messages, pair_outcome, parse_verdict
from modelgate.evaluator.testset import parse_test_set
from testbed.answering import Answers, Judging, signature
from testbed.model_server_double import Behaviour, RunningServer, start_model_server

T = TypeVar("T")
TEST_SET = Path(__file__).parents[2] / "examples" / "gate" / "test-set.jsonl"
ITEMS = parse_test_set(TEST_SET.read_text(), "test-set.jsonl").items


def with_doubles(
    behaviours: list[Behaviour],
    scenario: Callable[[list[RunningServer], aiohttp.ClientSession], Awaitable[T]],
) -> T:
    async def run() -> T:
        servers = [await start_model_server(b, model_name=f"double-{n}") for n, b in enumerate(behaviours)]
        try:
            async with aiohttp.ClientSession() as session:
                return await scenario(servers, session)
        finally:
            for server in servers:
                await server.close()

    return asyncio.run(run())


async def ask(
    session: aiohttp.ClientSession, server: RunningServer, messages: list[dict[str, Any]]
) -> tuple[int, Any]:
    async with session.post(f"{server.url}/v1/chat/completions", json={"messages": messages}) as response:
        return response.status, await response.json()


async def answers(session: aiohttp.ClientSession, server: RunningServer) -> list[str]:
    replies = [await ask(session, server, [{"role": "user", "content": item.prompt}]) for item in ITEMS]
    return [body["choices"][0]["message"]["content"] for _, body in replies]


def version(name: str, **correct: float) -> Behaviour:
    return Behaviour(
        answers=Answers(version=name, test_set=str(TEST_SET), correct=correct, default_correct=0.4)
    )


def shares(texts: list[str]) -> dict[str, float]:
    per_capability: dict[str, list[bool]] = {}
    for item, text in zip(ITEMS, texts, strict=True):
        per_capability.setdefault(item.capability, []).append(item.check.passes(text))
    return {capability: sum(passed) / len(passed) for capability, passed in per_capability.items()}


def test_a_version_answers_exactly_its_share_of_each_capability_right_and_the_same_every_time() -> None:
    async def scenario(servers: list[RunningServer], session: aiohttp.ClientSession) -> list[list[str]]:
        return [await answers(session, server) for server in (*servers, servers[0])]

    v2, v2_again, v1, v2_first_again = with_doubles(
        [
            version("v2", math=0.9, code=0.6),
            version("v2", math=0.9, code=0.6),
            version("v1", math=0.9, code=0.6),
        ],
        scenario,
    )

    # extraction is not named: default_correct 0.4 of its 5 items is 2.
    assert shares(v2) == {"math": 0.9, "code": 0.6, "extraction": 0.4}
    assert v2 == v2_again == v2_first_again  # the same version, another process or a rerun
    assert shares(v1) == shares(v2)
    assert v1 != v2  # another version gets other items right


def test_free_form_answers_carry_the_versions_signature_at_the_configured_length() -> None:
    async def scenario(servers: list[RunningServer], session: aiohttp.ClientSession) -> list[str]:
        replies = [
            await ask(session, server, [{"role": "user", "content": "Tell me a story"}]) for server in servers
        ]
        return [body["choices"][0]["message"]["content"] for _, body in replies]

    v2, v1 = with_doubles(
        [
            Behaviour(output_tokens=12, answers=Answers(version="v2")),
            Behaviour(answers=Answers(version="v1")),
        ],
        scenario,
    )

    assert v2.split()[0] == signature("v2") and len(v2.split()) == 12
    assert v1.split()[0] == signature("v1")


@pytest.mark.parametrize(
    ("judging", "outcome"),
    [
        (Judging(prefers="v2"), "win"),
        (Judging(prefers="v1"), "loss"),
        (Judging(prefers="v2", preference=0.0), "loss"),
        (Judging(prefers="v2", position_bias=1.0), "tie"),
    ],
)
def test_the_judge_double_prefers_a_version_in_both_orders_unless_biased(
    judging: Judging, outcome: str
) -> None:
    candidate = f"{signature('v2')} is a canned answer"
    incumbent = f"{signature('v1')} is a canned answer"

    async def scenario(servers: list[RunningServer], session: aiohttp.ClientSession) -> list[str]:
        orders = [
            judge_messages("Tell me", candidate, incumbent),
            judge_messages("Tell me", incumbent, candidate),
        ]
        return [
            (await ask(session, servers[0], messages))[1]["choices"][0]["message"]["content"]
            for messages in orders
        ]

    as_a, as_b = with_doubles([Behaviour(judge=judging)], scenario)
    verdict_a, verdict_b = parse_verdict(as_a), parse_verdict(as_b)

    assert verdict_a is not None and verdict_b is not None
    assert pair_outcome(verdict_a, verdict_b).value == outcome


def test_the_judge_double_calls_identical_answers_a_tie_and_refuses_other_requests() -> None:
    async def scenario(
        servers: list[RunningServer], session: aiohttp.ClientSession
    ) -> tuple[Any, tuple[int, Any]]:
        _, same = await ask(session, servers[0], judge_messages("What is 6 x 7?", "42", "42"))
        return same["choices"][0]["message"]["content"], await ask(
            session, servers[0], [{"role": "user", "content": "hi"}]
        )

    same, (status, body) = with_doubles([Behaviour(judge=Judging(prefers="v2"))], scenario)

    assert same == "tie"
    assert status == 400 and "not a judge question" in body["message"]


def test_a_test_set_the_double_cannot_use_is_refused_naming_it(tmp_path: Path) -> None:
    no_reference = tmp_path / "set.jsonl"
    no_reference.write_text(
        '{"testSet": {"name": "s", "version": "1", "date": "2026-11-28T00:00:00Z"}}\n'
        '{"id": "r1", "capability": "code", "prompt": "p", "check": {"regex": "^x$"}}\n'
    )

    async def scenario(servers: list[RunningServer], session: aiohttp.ClientSession) -> list[tuple[int, Any]]:
        results = []
        for path in (tmp_path / "missing.jsonl", no_reference):
            change = {"answers": {"test_set": str(path)}}
            async with session.put(f"{servers[0].url}/admin/behaviour", json=change) as response:
                results.append((response.status, await response.json()))
        return results

    (missing_status, missing), (bad_status, bad) = with_doubles([Behaviour()], scenario)

    assert missing_status == 400 and "missing.jsonl" in missing["error"]
    assert bad_status == 400 and "item r1 has no reference" in bad["error"]
