"""`modelgate eval --shards` against model-server doubles on 127.0.0.1: each shard, given its index
as an Indexed Job's Pod is (JOB_COMPLETION_INDEX), asks only its part, yet draws the replay's
sample and the judge's samples over the whole run; the shards' counts add up to exactly the result
of the unsharded run."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from modelgate.api.gate_result import TERMINATION_MESSAGE_LIMIT, GateResult
from modelgate.api.gate_shard import COMPLETION_INDEX_ENV, ShardResult
from modelgate.core.gate_scores import merged_result
from tests.unit.test_eval_cli import (
    REPLAY,
    TEST_SET,
    double,
    in_process_eval,
    model,
    process_logging_left_alone,  # noqa: F401 (an autouse fixture of these runs too)
)

pytestmark = pytest.mark.usefixtures("loopback_allowed")
SHARDS = 3
# Timings differ from run to run; every other figure must not.
TIMED = "replay-p95-latency-seconds"


@pytest.fixture(scope="module")
def arguments() -> Iterator[list[str]]:
    """A run with every kind of sample: the replay's, and the judge's over a judge that prefers the
    candidate on some pairs only, so that judging other pairs would count otherwise."""
    with ExitStack() as stack:
        candidate = stack.enter_context(double(*model("chat-v2", "math=0.9", "code=0.6")))
        incumbent = stack.enter_context(double(*model("chat-v1", "math=0.8", "code=0.8")))
        judge = stack.enter_context(
            double("--model-name", "judge", "--judge-prefers", "chat-v2", "--judge-preference", "0.6")
        )
        yield [
            "--candidate", candidate, "--incumbent", incumbent,
            "--candidate-model", "chat-v2", "--incumbent-model", "chat-v1",
            "--test-set", str(TEST_SET), "--replay", str(REPLAY), "--replay-sample", "25",
            "--judge", judge, "--judge-model", "judge", "--judge-samples", "30", "--seed", "11",
        ]  # fmt: skip


def untimed(result: GateResult) -> tuple[object, ...]:
    return tuple(s for s in result.scores if s.name != TIMED), result.win_rate, result.test_set


def test_the_shards_of_a_run_add_up_to_the_whole_run(
    arguments: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert in_process_eval(*arguments, "--result-file", tmp_path / "whole.json") == 0
    whole = GateResult.model_validate_json((tmp_path / "whole.json").read_text())
    shards = []
    for index in range(SHARDS):
        monkeypatch.setenv(COMPLETION_INDEX_ENV, str(index))
        written = tmp_path / f"shard-{index}.json"
        assert in_process_eval(*arguments, f"--shards={SHARDS}", "--result-file", written) == 0
        assert len(written.read_bytes()) <= TERMINATION_MESSAGE_LIMIT
        shards.append(ShardResult.model_validate_json(written.read_text()))

    merged = merged_result(shards)

    assert untimed(merged) == untimed(whole)
    assert whole.win_rate is not None and whole.win_rate.samples == 30
    assert {s.name: s.samples for s in merged.scores}[TIMED] == 25
    # Each shard asked its own part: a third of the test set's items and the replay's sample.
    assert [sum(c.items for c in s.capabilities) for s in shards] == [9, 8, 8]
    assert [s.replay.candidate.asked for s in shards if s.replay] == [9, 8, 8]


def test_a_shard_without_its_index_refuses_to_run(
    arguments: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(COMPLETION_INDEX_ENV, str(SHARDS))
    with pytest.raises(SystemExit, match=COMPLETION_INDEX_ENV):
        in_process_eval(*arguments, f"--shards={SHARDS}")
