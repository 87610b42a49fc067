"""A side as a group of workloads with roles (spec.*.members): what the API refuses, how the engine
holds a group whose member is not Available, which Pods a role's metric reads, and what a grouped
incumbent's scale-down scales."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from kubernetes import client

from modelgate.api import InvalidSpecError, Phase, RollbackReason, parse_spec
from modelgate.api.addresses import EgressPolicy
from modelgate.api.group_members import GroupMember
from modelgate.core import MemberAvailability
from modelgate.core.actions import incumbent_scale_downs
from modelgate.core.model import ScaleDownIncumbent
from modelgate.kube import DeploymentAvailability, Kube
from modelgate.kube.group_members import as_side
from modelgate.metrics.context import default_pod_regex
from modelgate.metrics.prometheus import PrometheusProvider
from modelgate.metrics.promql_plan import analysis_plan
from modelgate.reconciler import Reconciler
from tests.unit import test_breach_evidence
from tests.unit.engine_support import Simulator
from tests.unit.test_reconciler_scale_down import ScalingKube, window_just_passed
from tests.unit.test_reconciler_write_order import NOW

fake_prometheus = test_breach_evidence.prometheus  # a fixture: a fake Prometheus answering as its param says

PREFILL_TTFT = {"name": "prefill-ttft", "preset": "ttftP99", "max": 2.0, "role": "prefill"}
SIDE_ERRORS = {"name": "errors", "preset": "errorRate", "max": 0.01}


def group(revision: str, *roles: str) -> dict[str, Any]:
    return {
        "inferencePool": f"chat-{revision}",
        "members": [{"role": role, "deployment": f"chat-{revision}-{role}"} for role in roles],
    }


def grouped_spec(
    incumbent: dict[str, Any] | None = None,
    candidate: dict[str, Any] | None = None,
    metrics: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    return {
        "incumbent": incumbent or group("v1", "prefill", "decode"),
        "candidate": candidate or group("v2", "prefill", "decode"),
        "trafficRouting": {
            "gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "chat-v1", "candidateBackend": "chat-v2"}
        },
        "steps": [{"setWeight": 50}, {"setWeight": 100}],
        "analysis": {
            "interval": "30s",
            "prometheus": {"address": "http://prometheus.monitoring:9090"},
            "metrics": metrics or [SIDE_ERRORS, PREFILL_TTFT],
        },
        **extra,
    }


def refusal(document: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(InvalidSpecError) as refused:
        parse_spec(document)
    return dict(problem.split(": ", 1) for problem in refused.value.problems)


def test_a_candidate_decode_behind_an_incumbent_prefill_is_refused() -> None:
    problems = refusal(grouped_spec(candidate=group("v2", "decode")))
    assert "missing: prefill" in problems["spec.candidate.members"]


def test_a_group_on_one_side_only_is_refused_naming_the_candidates_members() -> None:
    problems = refusal(grouped_spec(candidate={"inferencePool": "chat-v2"}))
    assert "missing: decode, prefill" in problems["spec.candidate.members"]
    problems = refusal(grouped_spec(incumbent={"inferencePool": "chat-v1"}))
    assert "not in the incumbent: decode, prefill" in problems["spec.candidate.members"]


def test_a_role_twice_on_one_side_is_refused() -> None:
    twice = group("v2", "prefill", "decode")
    twice["members"].append({"role": "decode", "deployment": "chat-v2-decode-b"})
    assert "spec.candidate.members" in refusal(grouped_spec(candidate=twice))


def test_a_member_names_exactly_one_workload() -> None:
    both = group("v2", "prefill", "decode")
    both["members"][0]["workload"] = {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "p"}
    assert list(refusal(grouped_spec(candidate=both))) == ["spec.candidate.members[0]"]


def test_a_metric_names_a_role_the_group_has() -> None:
    router_ttft = {**PREFILL_TTFT, "role": "router"}
    problems = refusal(grouped_spec(metrics=[router_ttft]))
    assert "router" in problems["spec.analysis.metrics[0].role"]
    ungrouped = grouped_spec(incumbent={"inferencePool": "chat-v1"}, candidate={"inferencePool": "chat-v2"})
    assert "spec.analysis.metrics[1].role" in refusal(ungrouped)


def test_a_grouped_pool_incumbent_may_be_scaled_down() -> None:
    watch = {"duration": "5m", "scaleDownIncumbent": True}
    assert parse_spec(grouped_spec(watch=watch)).watch is not None
    pooled = grouped_spec(incumbent={"inferencePool": "chat-v1"}, candidate={"inferencePool": "chat-v2"})
    pooled["analysis"]["metrics"] = [SIDE_ERRORS]
    assert "spec.watch.scaleDownIncumbent" in refusal({**pooled, "watch": watch})


def members(decode_available: bool) -> tuple[MemberAvailability, ...]:
    return (
        MemberAvailability("prefill", "spec.candidate.members[0]", True, "1 of 1 replicas available"),
        MemberAvailability(
            "decode",
            "spec.candidate.members[1]",
            decode_available,
            f"{int(decode_available)} of 1 replicas available",
        ),
    )


def test_a_group_takes_no_traffic_until_every_member_is_available() -> None:
    spec = parse_spec(grouped_spec())
    sim = Simulator(spec, candidate_members=members(decode_available=False))
    sim.tick()
    assert (sim.phase, sim.live_weight) == (Phase.PENDING, 0)
    assert sim.status.candidate_available is False
    assert sim.status.message is not None and "decode (spec.candidate.members[1])" in sim.status.message
    sim.candidate_members = members(decode_available=True)
    sim.tick()
    assert sim.status.candidate_available is True and sim.phase is not Phase.PENDING


def test_a_grouped_incumbent_scales_down_every_member_once() -> None:
    pooled = parse_spec(grouped_spec()).incumbent
    assert [a.name for a in incumbent_scale_downs(pooled)] == ["chat-v1-prefill", "chat-v1-decode"]
    decode_target = pooled.model_copy(update={"inference_pool": None, "deployment": "chat-v1-decode"})
    assert [a.name for a in incumbent_scale_downs(decode_target)] == [
        "chat-v1-prefill",
        "chat-v1-decode",
    ]
    router_target = pooled.model_copy(update={"inference_pool": None, "deployment": "chat-v1-router"})
    scaled = incumbent_scale_downs(router_target)
    assert [a.name for a in scaled] == ["chat-v1-router", "chat-v1-prefill", "chat-v1-decode"]
    assert all(isinstance(a, ScaleDownIncumbent) for a in scaled)


def test_a_role_metric_reads_that_members_pods_on_each_side() -> None:
    spec = parse_spec(grouped_spec())
    plan = analysis_plan(spec, "serving")
    prefill = plan.metrics["prefill-ttft"]
    assert f'pod=~"{default_pod_regex("chat-v2-prefill")}"' in prefill.candidate
    assert (
        prefill.incumbent_drawn is not None
        and f'pod=~"{default_pod_regex("chat-v1-prefill")}"' in prefill.incumbent_drawn
    )
    assert "decode" not in prefill.candidate


def test_a_role_members_pod_regex_and_other_kinds_pods_are_used() -> None:
    candidate = group("v2", "prefill", "decode")
    candidate["members"][0] = {
        "role": "prefill",
        "workload": {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "name": "p2"},
    }
    incumbent = group("v1", "prefill", "decode")
    incumbent["members"][0]["podRegex"] = "prefill-one-[0-9]+"
    spec = parse_spec(grouped_spec(incumbent=incumbent, candidate=candidate))
    pods = {("candidate", "prefill"): ["p2-0", "p2-0-1", "p2-1"]}
    prefill = analysis_plan(spec, "serving", member_pods=pods).metrics["prefill-ttft"]
    assert 'pod=~"(p2-[a-z0-9]+|p2-0-1)"' in prefill.candidate  # the LeaderWorkerSet's Pods by family
    assert prefill.incumbent_drawn is not None and 'pod=~"prefill-one-[0-9]+"' in prefill.incumbent_drawn
    unread = analysis_plan(spec, "serving").metrics["prefill-ttft"]
    assert 'pod=~"LeaderWorkerSet_p2_has_no_Pods"' in unread.candidate


# -- a role's breach names that member's Pods --------------------------------------------------------
SLOW_PREFILL, FAST_PREFILL = "chat-v2-prefill-5d8f9-slow1", "chat-v2-prefill-5d8f9-fast1"
POD_NAMES = {
    "chat-v2-prefill": [FAST_PREFILL, SLOW_PREFILL],
    "chat-v2-decode": ["chat-v2-decode-6c7d8-a1b2c"],
}


def prefill_value_by_pod(path: str, params: dict[str, list[str]]) -> tuple[int, object]:
    if path == "/api/v1/query_exemplars":
        return 200, {"status": "success", "data": []}
    query = params["query"][0]
    value = "0.9" if SLOW_PREFILL in query else "0.1" if FAST_PREFILL in query else "0.5"
    return 200, {
        "status": "success",
        "data": {"resultType": "vector", "result": [{"metric": {}, "value": [0, value]}]},
    }


class GroupPods(Kube):
    def __init__(self) -> None:
        super().__init__(client.ApiClient())

    def deployment_pods(self, namespace: str, name: str) -> list[str]:
        return POD_NAMES.get(name, [])


@pytest.mark.parametrize("fake_prometheus", [prefill_value_by_pod], indirect=True)
def test_a_role_metrics_breach_names_that_members_pods(fake_prometheus: str) -> None:
    by_decode = {revision: group(revision, "prefill", "decode") for revision in ("v1", "v2")}
    for revision, side in by_decode.items():
        del side["inferencePool"]
        side["deployment"] = f"chat-{revision}-decode"
    document = grouped_spec(by_decode["v1"], by_decode["v2"], metrics=[PREFILL_TTFT])
    backends = {"incumbentBackend": "chat-v1-decode", "candidateBackend": "chat-v2-decode"}
    document["trafficRouting"]["gatewayAPI"].update(backends)
    document["analysis"]["prometheus"]["address"] = fake_prometheus
    provider = PrometheusProvider(GroupPods(), EgressPolicy(allow_loopback=True))
    reason = RollbackReason(time=datetime(2026, 3, 2, tzinfo=UTC), message="breach", metric="prefill-ttft")
    evidence = provider.explain(parse_spec(document), "serving", reason)
    assert [(pod.pod, pod.value) for pod in evidence.pods] == [(SLOW_PREFILL, 0.9), (FAST_PREFILL, 0.1)]


# -- the reconciler scales each incumbent member down ------------------------------------------------
class GroupScalingKube(ScalingKube):
    """ScalingKube read and scaled member by member as GroupMembers does: each member as a side."""

    def member_availability(self, namespace: str, member: GroupMember, field: str) -> DeploymentAvailability:
        return self.side_availability(namespace, as_side(member), field)

    def scale_member(self, namespace: str, member: GroupMember, replicas: int) -> None:
        self.scale_side(namespace, as_side(member), replicas)


def test_the_reconciler_scales_every_incumbent_member_down_once_the_window_has_passed() -> None:
    kube = window_just_passed(may_scale=True)
    for revision, side in (("v1", "incumbent"), ("v2", "candidate")):
        members = [{"role": "prefill", "deployment": f"chat-{revision}-prefill"}]
        kube.rollout["spec"][side]["members"] = [
            *members,
            {"role": "decode", "deployment": f"chat-{revision}"},
        ]
    grouped = GroupScalingKube(kube.rollout, kube.route, may_scale=True)
    Reconciler(cast(Kube, grouped), clock=lambda: NOW).tick(copy.deepcopy(grouped.rollout))
    assert grouped.rollout["status"]["phase"] == "Succeeded"
    assert grouped.scaled == [("chat-v1-prefill", 0), ("chat-v1", 0)]
    scaled_down = [message for _, reason, message in grouped.events if reason == "ScaledDown"]
    assert len(scaled_down) == 2 and "chat-v1-prefill" in scaled_down[0]
