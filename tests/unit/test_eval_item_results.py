"""The full per-item results `modelgate eval --results` writes: the GateResult and the inputs'
versions first, then each test-set item and replayed request with both sides' answers."""

from __future__ import annotations

import asyncio
import json

import pytest

from modelgate.api.addresses import EgressPolicy
from modelgate.evaluator.item_results import ItemResults, content_version
from modelgate.evaluator.jsonl import InputError
from modelgate.evaluator.replay_set import parse_replay
from modelgate.evaluator.result import gate_result
from modelgate.evaluator.scoring import Reply, capability_scores
from modelgate.evaluator.storage_io import ResultsNotStored, read_stored, write_results
from modelgate.evaluator.testset import parse_test_set
from tests.support.storage import SECRET, closed_port

BED = EgressPolicy(allow_loopback=True)
LOCATION = "s3://results/gate/ns/chat/1-x/quality"

SET = "\n".join(
    [
        '{"testSet": {"name": "qa", "version": "7", "date": "2026-12-01T00:00:00Z"}}',
        '{"id": "m1", "capability": "math", "prompt": "6 x 7?", "check": {"number": 42}}',
        '{"id": "m2", "capability": "math", "prompt": "2 + 2?", "check": {"number": 4}}',
    ]
)


def test_each_item_shows_both_answers_and_whether_each_passed_as_the_scores_counted() -> None:
    test_set = parse_test_set(SET, "qa.jsonl")
    candidate = [Reply("42", latency_seconds=0.5, output_tokens=3), Reply(None, error="HTTP 500")]
    incumbent = [Reply("41"), Reply("4")]
    results = ItemResults()
    results.read("testSet", "s3://sets/qa.jsonl", SET)
    results.add_test_set(test_set.items, candidate, incumbent)
    replay = parse_replay('{"prompt": "hello"}\n', "r.jsonl")
    results.add_replay(replay, [Reply("hi")], [Reply("hey")])
    scores = capability_scores(test_set.items, candidate, incumbent)
    lines = [
        json.loads(line)
        for line in results.jsonl(gate_result(test_set.identity, scores, None, replayed=1)).splitlines()
    ]

    header, m1, m2, replayed = lines
    assert header["inputs"]["testSet"] == {"source": "s3://sets/qa.jsonl", "version": content_version(SET)}
    assert header["result"]["scores"][0]["candidate"] == 0.5
    assert (m1["id"], m1["candidate"]["passed"], m1["incumbent"]["passed"]) == ("m1", True, False)
    assert m1["candidate"]["answer"] == "42" and m1["candidate"]["latencySeconds"] == 0.5
    # Each answer's output tokens as the server reported them; no key where it reported none.
    assert m1["candidate"]["outputTokens"] == 3 and "outputTokens" not in m1["incumbent"]
    assert (m2["candidate"]["passed"], m2["candidate"]["error"]) == (False, "HTTP 500")
    assert (replayed["kind"], replayed["line"], replayed["candidate"]["answer"]) == ("replay", 1, "hi")
    assert results.version == content_version(SET)


def test_the_version_is_the_contents_not_the_headers_word() -> None:
    changed = SET.replace("6 x 7?", "6 times 7?")
    assert content_version(SET) == content_version(SET)
    assert content_version(changed) != content_version(SET)  # same header, other content


def test_results_that_cannot_be_written_name_the_option_and_the_key() -> None:
    environ = {
        "MODELGATE_RESULTS_S3_ENDPOINT_URL": f"http://127.0.0.1:{closed_port()}",
        "MODELGATE_RESULTS_S3_ACCESS_KEY_ID": "AKIAEXAMPLE",
        "MODELGATE_RESULTS_S3_SECRET_ACCESS_KEY": SECRET,
    }
    with pytest.raises(ResultsNotStored) as failed:
        asyncio.run(
            write_results(
                LOCATION, ItemResults(), gate_result(None, [], None, replayed=0), BED, environ=environ
            )
        )
    message = str(failed.value)
    assert "--results" in message and f"{LOCATION}/no-inputs/results.jsonl" in message
    assert SECRET not in message


def test_a_stored_input_without_credentials_names_the_variable() -> None:
    with pytest.raises(InputError, match=r"--test-set s3://sets/qa.jsonl: \$AWS_ACCESS_KEY_ID"):
        asyncio.run(read_stored("s3://sets/qa.jsonl", "--test-set", BED, environ={}))
