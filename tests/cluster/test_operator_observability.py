"""What an operator of modelgate sees: its metrics scraped by Prometheus following a rollout, an
Event telling every transition, and JSON logs that carry rollout, namespace, step and weight, every
line of them JSON, kopf's too."""

from __future__ import annotations

import json
import time
from pathlib import Path

import yaml
from kubernetes import client

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.api import Phase
from modelgate.metrics.prometheus_http import PrometheusClient
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.ports import free_port
from testbed.waiting import wait_for
from tests.support.clusters import TestCluster
from tests.support.operators import running
from tests.support.scenario import serving

STEPS = [{"setWeight": 10}, {"setWeight": 30}, {"setWeight": 60}]


def no_other_rollouts(api_client: client.ApiClient, operator: OperatorProcess) -> None:
    """Waits until the session's operator has no rollout but this test's: the counters below are the
    operator's, and rollouts that earlier tests left in namespaces being deleted still tick for a while
    after they are gone from the API server (until its watch tells the operator)."""

    def none_left() -> bool:
        custom = client.CustomObjectsApi(api_client)
        return not custom.list_cluster_custom_object(API_GROUP, API_VERSION, PLURAL)["items"]

    def no_ticks_for(seconds: float) -> bool:
        before = operator.counter("modelgate_reconcile_duration_seconds_count")
        time.sleep(seconds)
        return operator.counter("modelgate_reconcile_duration_seconds_count") == before

    wait_for(none_left, timeout=60, interval=0.5, what="the rollouts of earlier tests to be gone")
    wait_for(lambda: no_ticks_for(3), timeout=60, what="the operator to tick no rollout for 3 s")


def test_metrics_events_and_logs_follow_a_rollout(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    operator: OperatorProcess,
    operator_scraped: PrometheusClient,
) -> None:
    prometheus = operator_scraped
    started = time.time()
    manifest = model_rollout(
        "chat",
        namespace,
        steps=STEPS,
        prometheus=local_bed.prometheus_url,
        metrics=SEED_METRICS,
        interval="2s",
    )
    counted = (
        "modelgate_reconcile_duration_seconds_count",
        "modelgate_tick_wait_seconds_count",
        "modelgate_api_requests_total",
        "modelgate_api_request_duration_seconds_count",
        "modelgate_metric_queries_total",
        "modelgate_metric_query_duration_seconds_count",
    )
    gets_before = operator.counter("modelgate_api_requests_total", verb="get", namespace=namespace)
    before = operator.counters(*counted)
    with serving(local_bed, api_client, namespace, Behaviour()) as scenario:
        scenario.apply(manifest)
        scenario.wait_for_status("success", lambda s: s.phase is Phase.SUCCEEDED)
    # A tick reads the rollout, its route and its Deployment from the watch caches, not the API server
    # (counted for this namespace alone: the session's operator serves other tests' resources too).
    gets = operator.counter("modelgate_api_requests_total", verb="get", namespace=namespace) - gets_before
    after = operator.counters(*counted)
    ticks, waits, requests, requests_timed, queries, queries_timed = (after[n] - before[n] for n in counted)
    assert ticks >= 5 and gets <= 3, (gets, ticks)
    # Ticks' waits for a worker, requests and queries are timed too (counted at their start, timed
    # at their end: with other tests' rollouts in flight the two need not match exactly).
    assert waits > 0 and requests > 0 and requests_timed > 0 and queries > 0 and queries_timed > 0
    # The rollout's own writes (status, route) are counted under its namespace.
    assert operator.counter("modelgate_api_requests_total", verb="patch", namespace=namespace) > 0

    selector = f'namespace="{namespace}",rollout="chat"'

    def scraped_success() -> bool:
        phase = prometheus.query(f'modelgate_rollout_phase{{{selector},phase="Succeeded"}}')
        promotions = prometheus.query(f"modelgate_promotions_total{{{selector}}}")
        # One tick per step and evaluation at least (the operator's total also counts other rollouts).
        ticks = prometheus.query(f"modelgate_rollout_reconciles_total{{{selector}}}")
        return phase.value == 1 and promotions.value == 1 and (ticks.value or 0) >= len(STEPS) + 1

    wait_for(scraped_success, timeout=30, what="Prometheus to scrape the operator's view of the success")

    def weights_seen() -> set[int]:
        # A subquery evaluates at whole seconds, so the newest sample shows a moment later: poll.
        window = f"{int(time.time() - started) + 5}s"
        seen = set()
        for weight in (10, 30, 60, 100):
            series = f"modelgate_rollout_candidate_weight{{{selector}}} == {weight}"
            if prometheus.query(f"count_over_time(({series})[{window}:1s])").value:
                seen.add(weight)
        return seen

    wait_for(
        lambda: weights_seen() == {10, 30, 60, 100}, timeout=15, what="every step's weight in Prometheus"
    )
    verdicts = prometheus.query(f'sum(modelgate_analysis_verdicts_total{{{selector},verdict="Pass"}})')
    assert verdicts.value is not None and verdicts.value >= 3 * len(SEED_METRICS)

    events = [
        e
        for e in client.CoreV1Api(api_client).list_namespaced_event(namespace).items
        if e.involved_object.kind == "ModelRollout"
    ]
    reasons = [e.reason for e in sorted(events, key=lambda e: e.event_time or e.first_timestamp)]
    for expected in ("NewRollout", "WeightSet", "RolloutSucceeded"):
        assert expected in reasons, reasons

    lines = operator.log_records()
    ours = [line for line in lines if line.get("namespace") == namespace]
    transitions = [line for line in ours if line["event"] == "transition"]
    logged = {line["reason"] for line in transitions}
    assert {"NewRollout", "RolloutStarted", "WeightSet", "StepCompleted", "RolloutSucceeded"} <= logged
    # A reconcile's transitions share one Event, which tells every one of them.
    assert len(events) < len(transitions), (reasons, logged)
    told = " ".join(e.message for e in events)
    for line in transitions:
        assert line["detail"] in told, (line["detail"], told)
    for line in transitions:
        assert {"rollout", "namespace", "step", "weight", "level", "timestamp"} <= line.keys(), line
    succeeded = next(line for line in transitions if line["reason"] == "RolloutSucceeded")
    assert (succeeded["rollout"], succeeded["weight"]) == ("chat", 100)


def unreachable(kubeconfig: Path, path: Path) -> Path:
    """A copy of the kubeconfig whose API server address nothing listens on."""
    config = yaml.safe_load(kubeconfig.read_text())
    for entry in config["clusters"]:
        entry["cluster"]["server"] = f"https://127.0.0.1:{free_port()}"
    path.write_text(yaml.safe_dump(config))
    return path


def test_every_line_the_operator_logs_is_json_from_the_first(cluster: TestCluster, tmp_path: Path) -> None:
    """kopf and the kubernetes client log through the standard library: each of their lines too,
    from the operator's first seconds, here kopf's retries of an API server it cannot reach (the same
    lines as an API server whose storage is still initialising answers with 429), at warning."""
    operator = OperatorProcess(unreachable(cluster.kubeconfig, tmp_path / "kubeconfig"), tmp_path, ["t-none"])
    with running(operator):
        wait_for(lambda: "kopf." in operator.logs(), timeout=60, what="kopf's first log line")
    lines = operator.logs().splitlines()
    assert [line for line in lines if not is_leveled_json(line)] == []  # the first lines too
    records = [json.loads(line) for line in lines]
    retries = [record for record in records if record.get("logger", "").startswith("kopf.")]
    assert retries and {record["level"] for record in retries} == {"warning"}, retries


def is_leveled_json(line: str) -> bool:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return False
    return isinstance(record, dict) and record.get("level") in ("debug", "info", "warning", "error")
