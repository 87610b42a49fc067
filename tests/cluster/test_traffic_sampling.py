"""Traffic sampling end to end against the bed's S3 server (moto): the refusal proxy in front of the
incumbent records a seeded 10% sample of 1,000 requests, its planted emails, keys and numbers
redacted; the next rollout's gate (`replay.recorded`) then replays exactly those requests against the
candidate, whose own proxy, recording every request, shows what it was sent."""

from __future__ import annotations

import json
import math
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from prometheus_client.parser import text_string_to_metric_families

from modelgate.api.gate_status import CheckState
from modelgate.api.object_url import ObjectUrl
from modelgate.egress import ALLOW_LOOPBACK_ENV
from testbed.check_pods import CheckPods
from testbed.localcluster import LocalCluster
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.proxied_double import ProxiedDouble, start_proxied_double
from testbed.s3_server import REGION, S3Server
from testbed.waiting import wait_for
from tests.support.gate import gated_rollout
from tests.support.kube import create
from tests.support.scenario import serving
from tests.support.storage import bed_store, run

REQUESTS = 1000
RATE = 0.1
# Binomial(1000, 0.1): mean 100, standard deviation 9.49; four either side hold a fair draw
# with probability 1 - 6e-5 (the draw is seeded: the same every run).
BOUND = 4 * math.sqrt(REQUESTS * RATE * (1 - RATE))
CHAT = "/v1/chat/completions"
SECRET = "recordings-store"


def planted_values(number: int) -> tuple[str, str, str]:
    """An email, an API key and a phone number, planted in request `number`."""
    return f"user{number}@example.com", f"sk-test{number:06d}abcdefghijkl", f"+1 555 010 {number:04d}"


def planted(number: int) -> tuple[str, str]:
    """Request `number`'s prompt, and what it must read as once recorded."""
    template = "Request {} from Jane: mail {} with key {}, or call {}."
    recorded = ("[REDACTED:email]", "[REDACTED:key]", "[REDACTED:number]")
    return template.format(number, *planted_values(number)), template.format(number, *recorded)


def store_environment(server: S3Server, prefix: str) -> dict[str, str]:
    secret = server.secret_data()
    return {
        f"{prefix}ENDPOINT_URL": secret["endpoint"],
        f"{prefix}REGION": REGION,
        f"{prefix}ACCESS_KEY_ID": secret["accessKeyId"],
        f"{prefix}SECRET_ACCESS_KEY": secret["secretAccessKey"],
        ALLOW_LOOPBACK_ENV: "true",  # moto listens on 127.0.0.1
    }


def recording_double(
    local_bed: LocalCluster, s3_server: S3Server, model: str, prefix: ObjectUrl, rate: float
) -> ProxiedDouble:
    args = [f"--record={prefix}", f"--record-rate={rate}", "--record-seed=25", "--record-batch-seconds=0.5"]
    args += ["--record-batch-requests=25"]
    return start_proxied_double(
        local_bed.processes, model, f"sampling-{model}", args, store_environment(s3_server, "AWS_")
    )


@pytest.fixture
def prefixes(s3_server: S3Server) -> tuple[ObjectUrl, ObjectUrl]:
    """The incumbent's recordings and the candidate's, under keys of this test's own."""
    run_id = uuid.uuid4().hex[:12]
    bucket = s3_server.buckets[0]
    return ObjectUrl(bucket, f"recorded/{run_id}/chat-v1"), ObjectUrl(bucket, f"recorded/{run_id}/chat-v2")


@pytest.fixture
def incumbent(
    local_bed: LocalCluster, s3_server: S3Server, prefixes: tuple[ObjectUrl, ObjectUrl]
) -> Iterator[ProxiedDouble]:
    pod = recording_double(local_bed, s3_server, "chat-v1", prefixes[0], RATE)
    yield pod
    pod.stop(local_bed.processes)


@pytest.fixture
def candidate(
    local_bed: LocalCluster, s3_server: S3Server, prefixes: tuple[ObjectUrl, ObjectUrl]
) -> Iterator[ProxiedDouble]:
    pod = recording_double(local_bed, s3_server, "chat-v2", prefixes[1], 1.0)
    yield pod
    pod.stop(local_bed.processes)


def ask(url: str, number: int) -> None:
    body = {"model": "chat-v1", "messages": [{"role": "user", "content": planted(number)[0]}]}
    request = urllib.request.Request(f"{url}{CHAT}", data=json.dumps(body).encode(), method="POST")
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
        response.read()


def recording(pod: ProxiedDouble) -> tuple[float, dict[str, float]]:
    """The requests drawn, and what became of them (by outcome)."""
    with urllib.request.urlopen(f"http://{pod.metrics_address}/metrics", timeout=5) as response:
        samples = [s for f in text_string_to_metric_families(response.read().decode()) for s in f.samples]
    drawn = next(s.value for s in samples if s.name == "llm_recording_drawn_requests_total")
    outcomes = {s.labels["outcome"]: s.value for s in samples if s.name == "llm_recording_records_total"}
    return drawn, outcomes


def all_written(pod: ProxiedDouble) -> int | None:
    """The records written, once every request drawn is written (none dropped)."""
    drawn, outcomes = recording(pod)
    written = outcomes.pop("written")
    assert sum(outcomes.values()) == 0, outcomes  # nothing dropped
    return int(written) if drawn and written == drawn else None


def stored_records(s3_server: S3Server, prefix: ObjectUrl) -> tuple[list[dict[str, Any]], bytes]:
    store = bed_store(s3_server)
    keys = run(store.keys(prefix))
    bodies = b"".join(run(store.read(ObjectUrl(prefix.bucket, key))).data for key in sorted(keys))
    return [json.loads(line) for line in bodies.splitlines()], bodies


def prompt(record: dict[str, Any]) -> str:
    content: str = record["messages"][0]["content"]
    return content


def test_a_redacted_tenth_is_recorded_and_the_next_gate_replays_exactly_those(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    s3_server: S3Server,
    prefixes: tuple[ObjectUrl, ObjectUrl],
    incumbent: ProxiedDouble,
    candidate: ProxiedDouble,
    tmp_path: Path,
) -> None:
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda number: ask(incumbent.proxy_url, number), range(REQUESTS)))
    written = wait_for(lambda: all_written(incumbent), timeout=20, what="the sampled requests to be written")

    records, stored = stored_records(s3_server, prefixes[0])
    assert len(records) == written
    assert abs(len(records) - REQUESTS * RATE) <= BOUND
    # Every planted value redacted, and nothing else of the prompt changed.
    numbers = [int(prompt(r).split()[1]) for r in records]
    assert [prompt(r) for r in records] == [planted(n)[1] for n in numbers]
    assert len(set(numbers)) == len(numbers)
    text = stored.decode()
    assert [value for number in numbers for value in planted_values(number) if value in text] == []

    # The next rollout's gate replays the incumbent's newest recorded requests against the candidate.
    create(api_client, storage_secret(s3_server, namespace))
    replay = {"recorded": {"s3": {"url": str(prefixes[0]), "secret": SECRET}, "last": REQUESTS}}
    check = {"name": "replay", "evaluator": {"replay": replay, "concurrency": 4}, "timeout": "2m"}
    services = {  # the Services' URLs, as the check Pod sees them
        f"http://chat-v2.{namespace}.svc:8000": candidate.proxy_url,
        f"http://chat-v1.{namespace}.svc:8000": incumbent.server_url,  # not recorded again
    }
    with (
        serving(local_bed, api_client, namespace, Behaviour(), rps=5) as scenario,
        CheckPods(api_client, namespace, tmp_path, services) as pods,
    ):
        scenario.apply(gated_rollout(namespace, [check], [{"setWeight": 50}]))
        final = scenario.wait_for_status(
            "the gate to decide", lambda s: s.gate is not None and s.gate.decision is not None, timeout=60
        )
        assert pods.failure is None, pods.failure
    assert final.gate is not None
    (measured,) = final.gate.checks
    assert measured.state is CheckState.MEASURED, measured.message
    assert {s.name: s.samples for s in measured.scores}["replay-error-rate"] == len(records)
    wait_for(lambda: all_written(candidate) == len(records), timeout=20, what="the candidate's recordings")
    replayed, _ = stored_records(s3_server, prefixes[1])
    assert Counter(prompt(r) for r in replayed) == Counter(prompt(r) for r in records)


def storage_secret(server: S3Server, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET, "namespace": namespace},
        "stringData": server.secret_data(),
    }
