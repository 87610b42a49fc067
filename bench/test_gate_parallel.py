"""Evaluation in parallel (issue 25, item 2), long form. On the bed, through the operator: a
20,000-item test set (served over HTTP: a ConfigMap holds at most 1 MiB) evaluated with parallelism 4
scores exactly as with parallelism 1 (tests/cluster/test_gate_parallel.py does 600 items in
`make test`). Items per second for 1, 2 and 4 shards: `modelgate eval --shards` run as an Indexed
Job's Pods are on the bed (one process per index, its index in JOB_COMPLETION_INDEX) against the
bed's model-server doubles, timed to the last shard's end; results in bench/results/gate_parallel.json
and bench/REPORT.md."""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pytest
from kubernetes import client

from bench.report import record
from modelgate.api.gate_result import GateResult
from modelgate.api.gate_shard import COMPLETION_INDEX_ENV, ShardResult
from modelgate.api.gate_status import CheckState
from modelgate.core.gate_scores import merged_result
from testbed.localcluster import LocalCluster
from testbed.operator_process import OperatorProcess
from tests.cluster.test_gate_evaluator import INCUMBENT, QUALITY, TEST_SET_FILE, evaluated
from tests.cluster.test_gate_parallel import CANDIDATE, figures
from tests.support.gate import qa_test_set
from tests.unit.test_eval_cli import ENV, double

pytestmark = pytest.mark.bench
ITEMS = 10_000  # per capability: 20,000 in all
RATE_ITEMS = 2_000  # per capability, for the rates: 4,000 in all
SHARD_COUNTS = (1, 2, 4)
# Doubles that answer at once (the evaluator's own CPU is then the limit), and doubles that take
# 50 ms an answer, as a model server with room for more requests in flight than one Pod sends.
LATENCIES = {"instant": [], "50ms": ["--sleep", "--latency=0.05"]}
CONCURRENCY = 8  # per shard and endpoint, the evaluator's default


@contextmanager
def files_served(directory: Path) -> Iterator[str]:
    """The directory over HTTP on 127.0.0.1 (the bed's operator and evaluator may reach loopback)."""
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_20000_items_in_four_shards_score_exactly_as_in_one_pod(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    with files_served(tmp_path) as files:
        evaluator = {**QUALITY["evaluator"], "testSet": {"url": f"{files}/{TEST_SET_FILE}"}}
        checks = [
            {**QUALITY, "name": name, "evaluator": evaluator, "parallelism": shards, "timeout": "15m"}
            for name, shards in (("whole", 1), ("sharded", 4))
        ]
        with evaluated(
            local_bed, api_client, namespace, tmp_path, CANDIDATE, items=ITEMS, checks=checks,
            set_in_config_map=False,
        ) as scenario:  # fmt: skip
            ends = ("the gate's decision", lambda s: s.gate is not None and s.gate.decision is not None)
            final = scenario.wait_for_status(*ends, timeout=900)
    assert final.gate is not None
    measured = {check.name: check for check in final.gate.checks}
    assert all(c.state is CheckState.MEASURED for c in measured.values()), [
        c.message for c in measured.values()
    ]
    assert figures(measured["sharded"]) == figures(measured["whole"])
    assert figures(measured["whole"])["math"] == (CANDIDATE["math"], INCUMBENT["math"], ITEMS)
    record(
        "gate_parallel_operator",
        {
            "items": 2 * ITEMS,
            "seconds": {
                name: (check.finished_at - final.gate.started_at).total_seconds()
                for name, check in measured.items()
                if check.finished_at is not None
            },
            "scores": {name: figures(check) for name, check in measured.items()},
        },
    )


def shards_run(arguments: list[str], shards: int, workdir: Path) -> tuple[float, GateResult]:
    """Every shard at once, as the Indexed Job's Pods: the seconds until the last ended, and the
    result their counts add up to (one shard writes the result itself)."""
    workdir.mkdir()
    command = [sys.executable, "-m", "modelgate", "eval", *arguments, f"--concurrency={CONCURRENCY}"]
    started = time.monotonic()
    with ExitStack() as stack:
        runs = [
            stack.enter_context(
                subprocess.Popen(
                    [*command, f"--shards={shards}", f"--result-file={workdir / f'{index}.json'}"],
                    env={**ENV, COMPLETION_INDEX_ENV: str(index)},
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
            for index in range(shards)
        ]
        codes = [run.wait(timeout=900) for run in runs]
    seconds = time.monotonic() - started
    assert codes == [0] * shards
    texts = [(workdir / f"{index}.json").read_text() for index in range(shards)]
    if shards == 1:
        return seconds, GateResult.model_validate_json(texts[0])
    return seconds, merged_result([ShardResult.model_validate_json(text) for text in texts])


@pytest.mark.parametrize("latency", LATENCIES)
def test_items_per_second_for_1_2_and_4_shards(latency: str, tmp_path: Path) -> None:
    test_set = tmp_path / TEST_SET_FILE
    test_set.write_text(qa_test_set(datetime.now(UTC), RATE_ITEMS))

    def knowing(version: str, correct: dict[str, float]) -> list[str]:
        shares = [f"--correct={name}={share}" for name, share in correct.items()]
        return ["--model-name", version, "--test-set", str(test_set), *shares, *LATENCIES[latency]]

    with ExitStack() as stack:
        candidate = stack.enter_context(double(*knowing("chat-v2", CANDIDATE)))
        incumbent = stack.enter_context(double(*knowing("chat-v1", INCUMBENT)))
        arguments = [f"--candidate={candidate}", f"--incumbent={incumbent}", f"--test-set={test_set}"]
        runs = {shards: shards_run(arguments, shards, tmp_path / f"{shards}") for shards in SHARD_COUNTS}
    results = {shards: result for shards, (_, result) in runs.items()}
    assert all(result.scores == results[1].scores for result in results.values())
    items = 2 * RATE_ITEMS
    record(
        f"gate_parallel_{latency}",
        {
            "items": items,
            "double_latency": latency,
            "requests_per_item": 2,
            "concurrency_per_shard": CONCURRENCY,
            "cpus": os.cpu_count(),
            "runs": {
                str(shards): {"seconds": round(seconds, 2), "items_per_second": round(items / seconds, 1)}
                for shards, (seconds, _) in runs.items()
            },
        },
    )
