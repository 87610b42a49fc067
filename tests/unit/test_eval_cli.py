"""`modelgate eval` against model-server doubles on 127.0.0.1 (no cluster): the result JSON means
what the doubles were configured to be. The full run is a separate process, as a Job's would be;
the others call the same entry point in this process, which is quicker."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from modelgate.api.gate_result import TERMINATION_MESSAGE_LIMIT, GateResult, SideRequests
from modelgate.api.gate_status import GateDecision
from modelgate.cli import gate_eval
from modelgate.cli.exit_codes import ExitCode
from modelgate.cli.gate_decide import EXIT_CODES
from modelgate.cli.main import main
from modelgate.core.gate_scores import wilson_lower_bound
from modelgate.egress import ALLOW_LOOPBACK_ENV
from testbed.ports import free_port
from testbed.processes import python_module_env
from tests.support.cli import modelgate

EXAMPLES = Path(__file__).parents[2] / "examples" / "gate"
TEST_SET = EXAMPLES / "test-set.jsonl"
REPLAY = EXAMPLES / "replay.jsonl"
# The doubles listen on 127.0.0.1, which only a local bed's setting lets a URL reach.
ENV = {**os.environ, **python_module_env(), ALLOW_LOOPBACK_ENV: "true"}
pytestmark = pytest.mark.usefixtures("loopback_allowed")  # for the runs in this process


@contextmanager
def double(*args: str) -> Iterator[str]:
    """A model-server double process; yields its OpenAI base URL. Stopped by its pid."""
    command = [sys.executable, "-m", "testbed.model_server_double", "--port", "0", *args]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV) as process:
        try:
            assert process.stdout is not None
            ready, _, _ = select.select([process.stdout], [], [], 60)
            assert ready, f"the double {args} printed no listening line"
            yield f"http://{json.loads(process.stdout.readline())['listening']}/v1"
        finally:
            process.terminate()
            process.wait(timeout=30)


def model(version: str, *correct: str) -> tuple[str, ...]:
    return ("--model-name", version, "--test-set", str(TEST_SET), *(f"--correct={c}" for c in correct))


def modelgate_eval(*args: str | Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "modelgate", "eval", *map(str, args)]
    return subprocess.run(command, capture_output=True, text=True, env=ENV, timeout=240, check=False)


@pytest.fixture(autouse=True)
def process_logging_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The command sets up structlog for its whole process (to this test's captured stderr, closed
    after it); run in this process, it must leave the tests after it their own set-up."""
    monkeypatch.setattr(gate_eval, "configure_logging", lambda *args, **kwargs: None)


def in_process_eval(*args: str | Path) -> int:
    return main(["eval", *map(str, args)])


@contextmanager
def behaviour_changed(base_url: str, change: dict[str, object]) -> Iterator[None]:
    """The double's knobs changed for a test, then put back (a new behaviour restarts its counts)."""
    admin = base_url.removesuffix("/v1") + "/admin/behaviour"
    with urllib.request.urlopen(admin, timeout=10) as response:
        before = response.read()
    put(admin, json.dumps(change).encode())
    try:
        yield
    finally:
        put(admin, before)


def put(url: str, body: bytes) -> None:
    request = urllib.request.Request(
        url, data=body, method="PUT", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200


@pytest.fixture(scope="module")
def endpoints() -> Iterator[dict[str, str]]:
    with ExitStack() as stack:
        yield {
            "candidate": stack.enter_context(double(*model("chat-v2", "math=0.9", "code=0.6"))),
            "incumbent": stack.enter_context(double(*model("chat-v1", "math=0.8", "code=0.8"))),
            "judge": stack.enter_context(double("--model-name", "judge", "--judge-prefers", "chat-v2")),
        }


def test_eval_scores_the_test_set_the_replay_and_the_judges_win_rate(
    endpoints: dict[str, str], tmp_path: Path
) -> None:
    result_file, summary_file = tmp_path / "result.json", tmp_path / "summary.txt"
    run = modelgate_eval(
        "--candidate", endpoints["candidate"], "--incumbent", endpoints["incumbent"],
        "--candidate-model", "chat-v2", "--incumbent-model", "chat-v1",
        "--test-set", TEST_SET, "--replay", REPLAY, "--replay-sample", "30",
        "--judge", endpoints["judge"], "--judge-model", "judge",
        "--result-file", result_file, "--summary-file", summary_file,
    )  # fmt: skip

    assert run.returncode == 0, run.stderr
    assert len(result_file.read_bytes()) <= TERMINATION_MESSAGE_LIMIT
    result = GateResult.model_validate_json(result_file.read_text())
    assert result.test_set is not None and result.test_set.version == "2026-11-28"
    scores = {s.name: s for s in result.scores}
    assert (scores["math"].candidate, scores["math"].incumbent, scores["math"].samples) == (0.9, 0.8, 10)
    assert (scores["code"].candidate, scores["code"].incumbent, scores["code"].samples) == (0.6, 0.8, 10)
    assert (scores["extraction"].candidate, scores["extraction"].incumbent) == (1.0, 1.0)
    assert scores["replay-error-rate"].samples == 30
    assert scores["replay-error-rate"].candidate == scores["replay-error-rate"].incumbent == 0.0
    assert scores["replay-changed-answers"].candidate == 1.0  # two versions word their answers differently
    # The judge prefers chat-v2's answers, which it is never told are the candidate's: every replayed
    # pair is a win; test items both models got right read the same, a tie.
    win_rate = result.win_rate
    assert win_rate is not None and win_rate.judge == "judge"
    assert win_rate.samples == 25 + 30
    assert win_rate.losses == 0 and win_rate.wins >= 30
    assert wilson_lower_bound(win_rate.wins, win_rate.ties, win_rate.losses, 0.95) > 0.5
    summary = summary_file.read_text()
    assert "code" in summary and "worse" in summary and "lower bound" in summary
    assert run.stdout == ""  # the summary went to its file


def test_a_judge_that_prefers_the_incumbent_gives_a_bound_under_a_half(
    endpoints: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with behaviour_changed(endpoints["judge"], {"judge": {"prefers": "chat-v1", "position_bias": 0.3}}):
        exit_code = in_process_eval(
            "--candidate", endpoints["candidate"], "--incumbent", endpoints["incumbent"],
            "--replay", REPLAY, "--judge", endpoints["judge"], "--judge-samples", "20", "--seed", "3",
            "--result-file", tmp_path / "result.json",
        )  # fmt: skip

    assert exit_code == 0
    win_rate = GateResult.model_validate_json((tmp_path / "result.json").read_text()).win_rate
    assert win_rate is not None and win_rate.samples == 20
    assert win_rate.wins == 0 and win_rate.ties > 0  # a biased order contradicts the other: a tie
    assert wilson_lower_bound(win_rate.wins, win_rate.ties, win_rate.losses, 0.95) < 0.5
    assert "lower bound" in capsys.readouterr().out  # no --summary-file: the summary on stdout


def test_replay_counts_errors_and_refusals_without_retries(endpoints: dict[str, str], tmp_path: Path) -> None:
    with behaviour_changed(endpoints["candidate"], {"error_rate": 0.2, "refusal_rate": 0.1}):
        exit_code = in_process_eval(
            "--candidate", endpoints["candidate"], "--incumbent", endpoints["incumbent"], "--replay", REPLAY,
            "--retries", "0", "--result-file", tmp_path / "result.json",
        )  # fmt: skip

    assert exit_code == 0
    scores = {
        s.name: s for s in GateResult.model_validate_json((tmp_path / "result.json").read_text()).scores
    }
    # 40 requests: exactly 8 answered 500 and 4 refused (shares of all), so 4 of the 32 answers.
    assert (scores["replay-error-rate"].candidate, scores["replay-error-rate"].samples) == (0.2, 40)
    assert (scores["replay-refusal-rate"].candidate, scores["replay-refusal-rate"].samples) == (0.125, 32)
    assert scores["replay-refusal-rate"].incumbent == 0.0


def test_an_unreachable_endpoint_fails_the_run_saying_which(
    endpoints: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nobody = f"http://127.0.0.1:{free_port()}/v1"  # claimed for this test, and nothing listens there
    exit_code = in_process_eval(
        "--candidate", nobody, "--incumbent", endpoints["incumbent"], "--test-set", TEST_SET,
        "--retries", "1", "--result-file", tmp_path / "result.json",
    )  # fmt: skip

    assert exit_code == 1
    assert f"the candidate endpoint {nobody} did not answer 2 attempts" in capsys.readouterr().err
    result = GateResult.model_validate_json((tmp_path / "result.json").read_text())
    assert result.scores == () and result.summary is not None and nobody in result.summary


def test_a_malformed_test_set_fails_the_run_naming_the_line_and_field(
    endpoints: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "set.jsonl"
    broken.write_text(TEST_SET.read_text().replace('"capability": "code"', '"capability": ""', 1))

    exit_code = in_process_eval(
        "--candidate", endpoints["candidate"], "--incumbent", endpoints["incumbent"], "--test-set", broken
    )

    assert exit_code == 1
    expected = f"{broken}, line 12: capability: String should have at least 1 character"
    assert expected in capsys.readouterr().err


def wrong_base_url(base_url: str) -> str:
    """A base URL one segment off: the double answers HTTP 404 to everything under it, as a server
    does to a mistyped base URL (the probe's GET .../models included, so the run goes on)."""
    return base_url.removesuffix("/v1") + "/wrong/v1"


def asked_per_side() -> int:
    """The examples' test-set items (below the header line) and replayed requests."""
    return len(TEST_SET.read_text().splitlines()) - 1 + len(REPLAY.read_text().splitlines())


def test_a_side_answered_404_to_every_request_fails_the_run_naming_it(
    endpoints: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exit_code = in_process_eval(
        "--candidate", wrong_base_url(endpoints["candidate"]), "--incumbent", endpoints["incumbent"],
        "--test-set", TEST_SET, "--replay", REPLAY, "--retries", "0",
        "--result-file", tmp_path / "result.json",
    )  # fmt: skip

    assert exit_code == ExitCode.NO_ANSWER != ExitCode.OK
    reasons = [line for line in capsys.readouterr().err.splitlines() if line.startswith("modelgate eval:")]
    assert len(reasons) == 1 and "candidate" in reasons[0] and "incumbent" not in reasons[0]
    # The result is written all the same, for the operator (or `modelgate gate`) to judge.
    requests = GateResult.model_validate_json((tmp_path / "result.json").read_text()).requests
    asked = asked_per_side()
    assert requests is not None
    assert requests.candidate == SideRequests(asked=asked, answered=0)
    assert requests.incumbent == SideRequests(asked=asked, answered=asked)
    assert {c.name: c.candidate.failed for c in requests.capabilities} == {
        "math": 10,
        "code": 10,
        "extraction": 5,
    }


def test_both_sides_answering_404_fail_the_run_and_the_gate_rejects_the_result(
    endpoints: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The measured bug: both scored 0 on every capability, "candidate worse on nothing", exit 0,
    and `modelgate gate` on examples/gate/rollout.yaml decided Canary."""
    result_file = tmp_path / "result.json"
    exit_code = in_process_eval(
        "--candidate", wrong_base_url(endpoints["candidate"]),
        "--incumbent", wrong_base_url(endpoints["incumbent"]),
        "--test-set", TEST_SET, "--retries", "0", "--result-file", result_file,
    )  # fmt: skip

    assert exit_code == ExitCode.NO_ANSWER
    reasons = [line for line in capsys.readouterr().err.splitlines() if line.startswith("modelgate eval:")]
    assert [("candidate" in line, "incumbent" in line) for line in reasons] == [(True, False), (False, True)]
    decided = modelgate(
        None, "gate", "-f", str(EXAMPLES / "rollout.yaml"), "--result", f"quality={result_file}"
    )
    assert decided.returncode == EXIT_CODES[GateDecision.REJECT], decided.stdout
    assert "0 of 25" in decided.stdout or "none of its 25" in decided.stdout
