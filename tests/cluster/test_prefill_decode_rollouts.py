"""Prefill/decode revisions released as one group, on the bed: examples/topologies/prefill-decode.yaml
as applied (testbed/prefill_decode.py), llm-d's simulator serving each revision's prefill and decode
Pods behind Traefik, a routing sidecar in front of each decode server reaching its revision's prefill
servers. A candidate whose decode is slow is rolled back as a group; a good one is promoted as one.
What each member served is read from its simulator's own counters."""

from __future__ import annotations

import copy
import json
import re
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import ModelRolloutStatus, Phase
from testbed.fleet import ModelFleet
from testbed.localcluster import LocalCluster
from testbed.loopback_pods import LoopbackPods
from testbed.operator_process import OperatorProcess
from testbed.prefill_decode import PREFILL_POD_HEADER, bed_manifests, serve_revision
from testbed.traefik_gateway import POD_HEADER, TraefikGateway, gateway, wait_until_served_by
from testbed.traffic_driver import CHAT_PATH, CHAT_REQUEST, BackgroundTraffic, gateway_driver
from testbed.waiting import wait_for
from tests.support.kube import create, route_weights
from tests.support.scenario import Rollouts, settled

FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)
MEMBERS = {"v1": ("chat-v1-prefill", "chat-v1-decode"), "v2": ("chat-v2-prefill", "chat-v2-decode")}
SERVED = re.compile(r"^vllm:e2e_request_latency_seconds_count\{[^}]*\} (\S+)$", re.MULTILINE)
BUSY_REQUESTS = 40  # served by each member of the revision on the route while the other stays quiet


@contextmanager
def prefill_decode_serving(
    bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    traefik: TraefikGateway,
    *,
    slow_decode: bool,
) -> Iterator[tuple[dict[str, Any], Rollouts, ModelFleet]]:
    """The example's objects but its ModelRollout, both revisions served; chat-v1 takes all of
    Traefik's traffic. Yields the ModelRollout (not applied yet), the namespace's rollouts and the
    fleet of servers."""
    manifests = bed_manifests(namespace, bed.prometheus_url)
    [rollout] = [m for m in manifests if m["kind"] == "ModelRollout"]
    create(api_client, gateway("inference", namespace, traefik.web_port))
    for manifest in manifests:
        if manifest is not rollout:
            create(api_client, with_slow_decode(manifest) if slow_decode else manifest)
    fleet = ModelFleet(bed, api_client)
    endpoints = LoopbackPods(bed, api_client)
    sidecars = []
    try:
        for prefill, decode in MEMBERS.values():
            sidecars += serve_revision(fleet, namespace, prefill, decode)
            endpoints.publish(namespace, decode)
        wait_until_served_by(traefik.url, "chat-v1-decode")
        with BackgroundTraffic(gateway_driver(traefik.url, rps=20)):
            yield rollout, Rollouts(api_client, namespace), fleet
    finally:
        for sidecar in sidecars:
            bed.processes.stop(sidecar)
        fleet.stop()


def with_slow_decode(manifest: dict[str, Any]) -> dict[str, Any]:
    """chat-v2-decode generating each token in 200 ms, not 10 ms: a slow decode behind a good prefill."""
    if manifest["kind"] != "Deployment" or manifest["metadata"]["name"] != "chat-v2-decode":
        return manifest
    slow = copy.deepcopy(manifest)
    [server] = slow["spec"]["template"]["spec"]["containers"]
    slow_args = {"--inter-token-latency": "200ms", "--inter-token-latency-std-dev": "20ms"}
    server["args"] = [_replaced(arg, slow_args) for arg in server["args"]]
    return slow


def _replaced(arg: str, values: dict[str, str]) -> str:
    name = arg.partition("=")[0]
    return f"{name}={values[name]}" if name in values else arg


def served(fleet: ModelFleet, deployment: str) -> float:
    """Requests the Deployment's simulators finished, by their own counters (no scrape lag)."""
    total = 0.0
    for url in fleet.urls(deployment):
        with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
            total += sum(float(value) for value in SERVED.findall(response.read().decode()))
    return total


def finished(
    rollouts: Rollouts, manifest: dict[str, Any], phase: Phase, timeout: float
) -> ModelRolloutStatus:
    rollouts.apply(manifest)
    final = rollouts.wait_for_status("the rollout to finish", lambda s: s.phase in FINISHED, timeout)
    assert final.phase is phase, final.message
    rollouts.wait_for_status("the route to carry the ending", settled(phase))
    return final


def assert_quiet(fleet: ModelFleet, quiet: tuple[str, ...], busy: tuple[str, ...]) -> None:
    """While the traffic goes on, the `busy` Deployments serve and the `quiet` ones serve nothing
    (once the requests they had in flight when the route changed have finished)."""
    last: dict[str, float] = {}

    def no_more_answers() -> dict[str, float] | None:
        now = {name: served(fleet, name) for name in quiet}
        stable = now == last
        last.update(now)
        return now if stable else None

    before = wait_for(no_more_answers, timeout=20, interval=2, what=f"{', '.join(quiet)} to finish")
    busy_before = {name: served(fleet, name) for name in busy}
    wait_for(
        lambda: all(served(fleet, name) >= busy_before[name] + BUSY_REQUESTS for name in busy),
        timeout=30,
        what=f"{', '.join(busy)} to serve {BUSY_REQUESTS} more requests each",
    )
    assert {name: served(fleet, name) for name in quiet} == before


def answered_by(url: str, requests: int) -> set[tuple[str, str]]:
    """(decode Pod's Deployment, prefill Pod's Deployment) of each answer the gateway at `url` gave."""
    pairs = set()
    for _ in range(requests):
        request = urllib.request.Request(
            f"{url}{CHAT_PATH}", data=json.dumps(CHAT_REQUEST).encode(), method="POST"
        )
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=10) as response:
            pods = (response.headers[POD_HEADER], response.headers[PREFILL_POD_HEADER])
        pairs.add((pods[0].rsplit("-", 2)[0], pods[1].rsplit("-", 2)[0]))
    return pairs


def test_a_candidate_with_a_slow_decode_is_rolled_back_as_a_group(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    traefik: TraefikGateway,
) -> None:
    with prefill_decode_serving(local_bed, api_client, namespace, traefik, slow_decode=True) as (
        rollout,
        rollouts,
        fleet,
    ):
        final = finished(rollouts, rollout, Phase.ROLLED_BACK, timeout=150)
        reason = final.rollback_reason
        assert reason is not None and reason.metric == "decode-tpot", reason
        assert reason.value is not None and reason.value > 0.05, reason
        candidate = MEMBERS["v2"]
        assert all(served(fleet, name) > 0 for name in candidate), "the candidate's members never served"
        assert route_weights(api_client, namespace, "chat") == {"chat-v1-decode": 100, "chat-v2-decode": 0}
        assert_quiet(fleet, quiet=candidate, busy=MEMBERS["v1"])


def test_a_candidate_group_without_the_incumbents_prefill_is_refused_at_admission(
    api_client: client.ApiClient, namespace: str
) -> None:
    [rollout] = [m for m in bed_manifests(namespace, "http://127.0.0.1:9090") if m["kind"] == "ModelRollout"]
    rollout["spec"]["candidate"]["members"] = [{"role": "decode", "deployment": "chat-v2-decode"}]
    with pytest.raises(ApiException) as refused:
        client.CustomObjectsApi(api_client).create_namespaced_custom_object(
            API_GROUP, API_VERSION, namespace, PLURAL, rollout, dry_run="All"
        )
    assert refused.value.status == 422, refused.value.body
    causes = json.loads(refused.value.body or "{}")["details"]["causes"]
    # The group, and the metric that judges the prefill role the candidate no longer has.
    assert [cause["field"] for cause in causes] == ["spec.candidate.members", "spec.analysis.metrics"], causes
