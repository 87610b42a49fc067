"""`modelgate eval` against llm-d's vLLM simulator (llm-d-inference-sim), a model server nobody on
this project wrote, rather than our model-server doubles: the doubles share the evaluator's idea of
the OpenAI API, so only a server written by others shows that the client reads the real thing.

The simulator runs in echo mode: a chat completion's answer is the request's last message, so a test
set whose prompts are their own right answers passes, and one whose prompts are questions fails. Its
stand-in tokenizer rebuilds the text from tokens and drops what it has no token for (leading
whitespace, backticks, `|`, non-ASCII letters): the prompts here use none of them.

The simulator is the binary `make test` builds (hack/build-bins.sh); a missing one fails these tests.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from modelgate.api.gate_result import GateResult, Score
from modelgate.cli import gate_eval
from modelgate.cli.exit_codes import ExitCode
from modelgate.evaluator.model_client import ChatClient, Endpoint
from modelgate.evaluator.scoring import Reply
from testbed.inference_sim import SimulatorFlags, start_simulator
from testbed.ports import LOOPBACK, free_port
from testbed.processes import ProcessRegistry
from testbed.waiting import wait_for
from tests.unit.test_eval_cli import in_process_eval, modelgate_eval

# Quick answers, so that retries and replays take little time. The simulator draws latencies in
# whole milliseconds, within 0.3 to 1.7 times their mean.
FLAGS = SimulatorFlags(
    time_to_first_token=0.01,
    time_to_first_token_std_dev=0.001,
    inter_token_latency=0.002,
    inter_token_latency_std_dev=0.0,
)
SHORTEST_ANSWER_SECONDS = 0.3 * FLAGS.time_to_first_token  # no answer comes sooner
# Every chat completion answered 503, as an overloaded vLLM does; GET /v1/models still answers.
ALWAYS_FAILING = dataclasses.replace(FLAGS, failure_rate_percent=100, failure_types=("server_error",))

PERSON_SCHEMA = {"type": "object", "required": ["name", "age"]}
PERSON_JSON = '{"name": "Ada Lovelace", "age": 36}'

# Each prompt is its own right answer: echoed back, it passes its check.
ECHO_PASSES = (
    {"id": "exact-01", "capability": "exact", "prompt": "42", "check": {"exact": "42"}},
    {"id": "exact-02", "capability": "exact", "prompt": "Paris.", "check": {"exact": "Paris."}},
    {"id": "number-01", "capability": "number", "prompt": "17 + 25 = 42", "check": {"number": 42}},
    {
        "id": "number-02",
        "capability": "number",
        "prompt": "The square root of 2 is about 1.414",
        "check": {"number": 1.41, "tolerance": 0.005},
    },
    {
        "id": "regex-01",
        "capability": "regex",
        "prompt": "s[::-1]",
        "check": {"regex": r"^s\[::-1\]$"},
        "reference": "s[::-1]",
    },
    {
        "id": "json-01",
        "capability": "json",
        "prompt": PERSON_JSON,
        "check": {"jsonSchema": PERSON_SCHEMA},
        "reference": PERSON_JSON,
    },
)
# The same checks, asked as questions: the echoed question fails every one.
ECHO_FAILS = (
    {"id": "exact-01", "capability": "exact", "prompt": "What is 17 + 25?", "check": {"exact": "42"}},
    # The last number of the echo is 25, not 42: the number check reads the last one.
    {"id": "number-01", "capability": "number", "prompt": "What is 17 + 25?", "check": {"number": 42}},
    {
        "id": "regex-01",
        "capability": "regex",
        "prompt": "Write a Python expression that reverses the string s.",
        "check": {"regex": r"^s\[::-1\]$"},
        "reference": "s[::-1]",
    },
    {
        "id": "json-01",
        "capability": "json",
        "prompt": "Return JSON with the name and age of: Ada Lovelace, 36.",
        "check": {"jsonSchema": PERSON_SCHEMA},
        "reference": PERSON_JSON,
    },
)
CAPABILITIES = ("exact", "number", "regex", "json")

# Recorded by a client that streamed: the evaluator replays them streaming. The recorded model gives
# way to --candidate-model and --incumbent-model (the simulator 404s on "chat").
STREAMED_REPLAY = (
    {"prompt": "Please suggest a name for a bakery.", "model": "chat", "stream": True},
    {
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Could you explain what a Kubernetes Deployment is?"},
        ],
        "max_tokens": 256,
        "stream": True,
    },
)
# What echo mode answers each: the last message.
STREAMED_REPLAY_ANSWERS = (
    "Please suggest a name for a bakery.",
    "Could you explain what a Kubernetes Deployment is?",
)

pytestmark = pytest.mark.usefixtures("loopback_allowed")  # the simulators listen on 127.0.0.1


@dataclass(frozen=True)
class Simulator:
    model: str
    base_url: str  # ending in /v1, as `modelgate eval` takes it


@contextmanager
def simulator(processes: ProcessRegistry, model: str, flags: SimulatorFlags) -> Iterator[Simulator]:
    """The simulator serving `model` on a free port of 127.0.0.1, started as the bed starts a model
    Pod's (MissingBinary when it is not built); stopped by its pid when the block ends."""
    port = free_port()
    # Each serves its own name, which the evaluator sends.
    served = dataclasses.replace(flags, served_model_name=model)
    process = start_simulator(processes, f"sim-{model}", LOOPBACK, port, served.args(model))
    root = f"http://{LOOPBACK}:{port}"
    try:
        wait_for(
            lambda: healthy(root), timeout=30, what=f"the simulator of {model} (log: {process.log_file})"
        )
        yield Simulator(model, f"{root}/v1")
    finally:
        processes.stop(process)


def healthy(root: str) -> bool:
    with urllib.request.urlopen(f"{root}/health", timeout=2) as response:
        return bool(response.status == 200)


@pytest.fixture(scope="module")
def processes(tmp_path_factory: pytest.TempPathFactory) -> ProcessRegistry:
    return ProcessRegistry(tmp_path_factory.mktemp("simulators"))


@pytest.fixture(scope="module")
def simulators(processes: ProcessRegistry) -> Iterator[dict[str, Simulator]]:
    """Healthy simulators for the candidate, the incumbent and the judge: each its own server and
    model name, as in a cluster."""
    with ExitStack() as stack:
        yield {
            role: stack.enter_context(simulator(processes, model, FLAGS))
            for role, model in (("candidate", "chat-v2"), ("incumbent", "chat-v1"), ("judge", "judge"))
        }


def write_jsonl(path: Path, lines: Sequence[Mapping[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def write_test_set(path: Path, items: Sequence[Mapping[str, object]]) -> Path:
    header = {"testSet": {"name": path.stem, "version": "1", "date": "2026-12-01T00:00:00Z"}}
    return write_jsonl(path, [header, *items])


def common_args(candidate: Simulator, incumbent: Simulator, tmp_path: Path) -> list[str | Path]:
    return [
        "--candidate", candidate.base_url, "--candidate-model", candidate.model,
        "--incumbent", incumbent.base_url, "--incumbent-model", incumbent.model,
        "--result-file", tmp_path / "result.json", "--summary-file", tmp_path / "summary.txt",
    ]  # fmt: skip


def eval_against(
    candidate: Simulator, incumbent: Simulator, tmp_path: Path, *args: str | Path
) -> tuple[subprocess.CompletedProcess[str], GateResult]:
    """`modelgate eval` as a check Job runs it (its own process); the run and its GateResult."""
    run = modelgate_eval(*common_args(candidate, incumbent, tmp_path), *args)
    return run, GateResult.model_validate_json((tmp_path / "result.json").read_text())


def timed_eval_in_process(
    candidate: Simulator, incumbent: Simulator, tmp_path: Path, *args: str | Path
) -> tuple[int, GateResult, float]:
    """`modelgate eval` run in this process, for a time without a new interpreter's start-up in it:
    its exit code, its GateResult and the seconds it took."""
    started = time.monotonic()
    exit_code = in_process_eval(*common_args(candidate, incumbent, tmp_path), *args)
    elapsed = time.monotonic() - started
    return exit_code, GateResult.model_validate_json((tmp_path / "result.json").read_text()), elapsed


@dataclass(frozen=True)
class Asked:
    """One chat request the evaluator made, and the reply it read."""

    role: str
    stream: bool
    reply: Reply


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list[Asked]:
    """The chat requests of a run in this process, as they are made (the client itself is kept)."""
    made: list[Asked] = []
    complete = ChatClient.complete

    async def recorded(
        client: ChatClient, endpoint: Endpoint, messages: Sequence[Mapping[str, Any]], **options: Any
    ) -> Reply:
        reply = await complete(client, endpoint, messages, **options)
        made.append(Asked(endpoint.role, options.get("stream", False), reply))
        return reply

    monkeypatch.setattr(ChatClient, "complete", recorded)
    return made


@pytest.fixture
def logging_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run in this process, the command must not set up logging for the whole test process (as
    tests/unit/test_eval_cli.py explains)."""
    monkeypatch.setattr(gate_eval, "configure_logging", lambda *args, **kwargs: None)


def by_name(result: GateResult) -> dict[str, Score]:
    return {score.name: score for score in result.scores}


def capability_shares(result: GateResult) -> dict[str, tuple[float, float | None, int]]:
    """Per capability: the candidate's and the incumbent's pass rates and the items they stand on."""
    scores = by_name(result)
    return {
        name: (scores[name].candidate, scores[name].incumbent, scores[name].samples) for name in CAPABILITIES
    }


def test_answers_the_simulator_echoes_right_pass_every_kind_of_check(
    simulators: dict[str, Simulator], tmp_path: Path
) -> None:
    """Against the simulator, not our double: the evaluator reads a chat completion written by a
    server of someone else's, and each kind of check passes on the text it carries."""
    test_set = write_test_set(tmp_path / "echo-passes.jsonl", ECHO_PASSES)

    run, result = eval_against(
        simulators["candidate"], simulators["incumbent"], tmp_path, "--test-set", test_set
    )

    assert run.returncode == 0, run.stderr
    assert result.test_set is not None and result.test_set.name == "echo-passes"
    expected = {
        "exact": (1.0, 1.0, 2),
        "number": (1.0, 1.0, 2),
        "regex": (1.0, 1.0, 1),
        "json": (1.0, 1.0, 1),
    }
    assert capability_shares(result) == expected
    # Its usage.completion_tokens counted every answer on both sides; both echo the same prompts.
    for entry in result.tokens:
        assert entry.candidate.counted == expected[entry.name][2] and entry.candidate.uncounted == 0
        assert entry.candidate == entry.incumbent and entry.candidate.tokens > 0


def test_answers_the_simulator_echoes_wrong_fail_and_the_run_still_measured(
    simulators: dict[str, Simulator], tmp_path: Path
) -> None:
    """Against the simulator, not our double: wrong answers from a real server score 0 per capability,
    and the run exits 0 (it measured; judging the scores is the operator's)."""
    test_set = write_test_set(tmp_path / "echo-fails.jsonl", ECHO_FAILS)

    run, result = eval_against(
        simulators["candidate"], simulators["incumbent"], tmp_path, "--test-set", test_set
    )

    assert run.returncode == 0, run.stderr
    assert capability_shares(result) == {name: (0.0, 0.0, 1) for name in CAPABILITIES}


@pytest.mark.usefixtures("logging_left_alone")
def test_requests_recorded_as_streaming_are_replayed_streaming_and_read_whole(
    simulators: dict[str, Simulator], tmp_path: Path, asked: list[Asked]
) -> None:
    """Against the simulator, not our double: it streams when asked to, in server-sent events as
    vLLM sends them. A recorded `stream: true` is replayed streaming, and the evaluator joins the
    simulator's pieces into whole answers: the echoed messages, first content before the end."""
    replay = write_jsonl(tmp_path / "streamed.jsonl", STREAMED_REPLAY)

    exit_code, result, _ = timed_eval_in_process(
        simulators["candidate"], simulators["incumbent"], tmp_path, "--replay", replay
    )

    assert exit_code == 0
    assert sorted((a.role, a.stream, a.reply.text) for a in asked) == sorted(
        (role, True, answer) for role in ("candidate", "incumbent") for answer in STREAMED_REPLAY_ANSWERS
    )
    for reply in (a.reply for a in asked):
        assert reply.first_token_seconds is not None and reply.latency_seconds is not None
        # The simulator waits its time to first token, then sends a token every inter-token latency.
        assert SHORTEST_ANSWER_SECONDS <= reply.first_token_seconds < reply.latency_seconds
        # Asked stream_options.include_usage, it ends the stream with the answer's token count.
        assert reply.output_tokens is not None and reply.output_tokens > 0
    scores = by_name(result)
    assert (scores["replay-error-rate"].candidate, scores["replay-error-rate"].incumbent) == (0.0, 0.0)
    mean_chars = round(sum(map(len, STREAMED_REPLAY_ANSWERS)) / len(STREAMED_REPLAY_ANSWERS), 4)
    assert (
        scores["replay-mean-answer-chars"].candidate
        == scores["replay-mean-answer-chars"].incumbent
        == mean_chars
    )
    assert scores["replay-changed-answers"].candidate == 0.0  # both echo the same last messages
    # The latency score stays the time to the whole answer, the simulator's first token included.
    latency = scores["replay-p95-latency-seconds"]
    assert latency.incumbent is not None
    assert min(latency.candidate, latency.incumbent) >= SHORTEST_ANSWER_SECONDS


@pytest.mark.usefixtures("logging_left_alone")
def test_a_simulator_answering_503_to_everything_is_retried_then_scored_as_failing(
    simulators: dict[str, Simulator], processes: ProcessRegistry, tmp_path: Path
) -> None:
    """Against the simulator, not our double: its injected failures are a real server's 503s. It
    answers the probe (GET /v1/models), so the run measures, each request is retried, and what
    failed after the retries counts against the candidate: its items fail their checks and its
    replayed requests are errors. It answered nothing, so the run exits with its own code (as
    docs/gate-eval.md says), the result written."""
    test_set = write_test_set(tmp_path / "echo-passes.jsonl", ECHO_PASSES)
    replay = write_jsonl(tmp_path / "streamed.jsonl", STREAMED_REPLAY)

    with simulator(processes, "chat-v3", ALWAYS_FAILING) as failing:
        exit_code, result, elapsed = timed_eval_in_process(
            failing, simulators["incumbent"], tmp_path,
            "--test-set", test_set, "--replay", replay, "--retries", "2",
        )  # fmt: skip

    assert exit_code == ExitCode.NO_ANSWER
    assert result.summary is not None and not result.summary.startswith("could not measure")
    assert result.requests is not None and result.requests.candidate.answered == 0
    assert {name: share[:2] for name, share in capability_shares(result).items()} == {
        name: (0.0, 1.0) for name in CAPABILITIES
    }
    errors = by_name(result)["replay-error-rate"]
    assert (errors.candidate, errors.incumbent, errors.samples) == (1.0, 0.0, len(STREAMED_REPLAY))
    assert by_name(result)["replay-refusal-rate"].samples == 0  # the candidate answered nothing
    # Each request waited 0.5 s and then 1 s before its two retries, and the replay starts once the
    # test set is done: without retries the run takes a few milliseconds.
    assert elapsed >= 2 * (0.5 + 1.0)


def test_a_judge_that_echoes_gives_no_verdict_and_its_pairs_are_left_out(
    simulators: dict[str, Simulator], tmp_path: Path
) -> None:
    """Against the simulator, not our double: a real server as the judge, answering with the question
    itself, which starts with no verdict. Such pairs are left out of the counts with a warning, not
    counted as ties."""
    test_set = write_test_set(tmp_path / "echo-passes.jsonl", ECHO_PASSES)
    judge = simulators["judge"]

    run, result = eval_against(
        simulators["candidate"], simulators["incumbent"], tmp_path,
        "--test-set", test_set, "--judge", judge.base_url, "--judge-model", judge.model,
    )  # fmt: skip

    assert run.returncode == 0, run.stderr
    assert result.win_rate is not None
    assert (result.win_rate.samples, result.win_rate.judge) == (0, judge.model)
    assert "left out" in run.stderr


def test_an_endpoint_without_a_model_name_fails_loudly_not_quietly(
    simulators: dict[str, Simulator], tmp_path: Path
) -> None:
    """Against the simulator, not our double: a real server answers a request that names no model
    with 404. Every candidate item then scores as wrong, and standard error must say why, or a
    misconfigured check would quietly fail a good candidate; the candidate answered nothing, so the
    run exits with its own code, naming it."""
    test_set = write_test_set(tmp_path / "echo-passes.jsonl", ECHO_PASSES)
    candidate, incumbent = simulators["candidate"], simulators["incumbent"]
    run = modelgate_eval(
        "--candidate", candidate.base_url,
        "--incumbent", incumbent.base_url, "--incumbent-model", incumbent.model,
        "--test-set", test_set, "--result-file", tmp_path / "result.json",
        "--summary-file", tmp_path / "summary.txt",
    )  # fmt: skip
    result = GateResult.model_validate_json((tmp_path / "result.json").read_text())

    assert run.returncode == ExitCode.NO_ANSWER, run.stderr
    assert {name: share[:2] for name, share in capability_shares(result).items()} == {
        name: (0.0, 1.0) for name in CAPABILITIES
    }
    reasons = [line for line in run.stderr.splitlines() if line.startswith("modelgate eval:")]
    assert len(reasons) == 1 and "candidate" in reasons[0], run.stderr
    warned = [line for line in run.stderr.splitlines() if "failed after every retry" in line]
    assert len(warned) == 1, run.stderr  # the candidate's; the incumbent answered every request
    assert "candidate" in warned[0] and "404" in warned[0], warned
