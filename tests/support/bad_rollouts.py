"""Malformed ModelRollouts, one row each: an edit of a valid manifest and the field the refusal must
name. Rows the API server refuses (schema and CEL) are checked against a real one by
tests/cluster/test_bad_manifests.py and against the models by tests/unit/test_bad_manifests_models.py;
rows only the operator can see (what the spec names does not exist, or a query it cannot build) end
Failed with the field in the message and no traffic moved."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from testbed.manifests import SEED_METRICS, Manifest, model_rollout
from tests.support.disguised_hosts import CIRCLED_16_9, IDEOGRAPHIC_FULL_STOP, fullwidth

Edit = Callable[[Manifest], None]


def valid_rollout(namespace: str, name: str = "bad") -> Manifest:
    """A rollout the API server takes and the operator can run, with every part the rows edit."""
    manifest = model_rollout(
        name,
        namespace,
        steps=[{"setWeight": 10}, {"pause": {"duration": "1m"}}, {"setWeight": 50}],
        prometheus="http://127.0.0.1:9090",
        metrics=copy.deepcopy(SEED_METRICS),
        rollback={"onPrometheusError": "pause", "maxConsecutiveErrors": 3},
    )
    spec = manifest["spec"]
    spec["analysis"]["prometheus"]["bearerTokenSecretRef"] = {"name": "prom-token", "key": "token"}
    spec["progressDeadlines"] = {"pending": {"after": "10m", "action": "rollback"}}
    return manifest


def _parent(manifest: Manifest, path: str) -> tuple[Any, str | int]:
    """The container holding the last key of a dotted path ("spec.steps.0.setWeight"), and that key."""
    *parents, last = path.split(".")
    node: Any = manifest
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    return node, int(last) if isinstance(node, list) else last


def put(path: str, value: Any) -> Edit:
    def edit(manifest: Manifest) -> None:
        node, key = _parent(manifest, path)
        node[key] = copy.deepcopy(value)

    return edit


def drop(path: str) -> Edit:
    def edit(manifest: Manifest) -> None:
        node, key = _parent(manifest, path)
        del node[key]

    return edit


def edits(*steps: Edit) -> Edit:
    def edit(manifest: Manifest) -> None:
        for step in steps:
            step(manifest)

    return edit


@dataclass(frozen=True)
class BadRollout:
    edit: Edit
    field: str  # as the API server's 422 names it (causes[].field), or as the operator's message does
    by_operator: bool = False  # only the operator can see it: Failed, naming the field
    # The limit the refusal of the field must state (a duration's bound, say), where there is one.
    bound: str | None = None


def _operator(edit: Edit, field: str) -> BadRollout:
    return BadRollout(edit, field, by_operator=True)


STEP0 = "spec.steps.0"
METRIC0 = "spec.analysis.metrics.0"
METRIC0_FIELD = "spec.analysis.metrics[0]"
GOODPUT = {"name": "goodput", "preset": "goodputPerAccelerator", "goodput": {"ttft": 0.5, "tpot": 0.05}}
PROMETHEUS = "spec.analysis.prometheus"
ROUTE = "spec.trafficRouting.gatewayAPI"
ISTIO = "spec.trafficRouting.istio"
ISTIO_ROUTING = {
    "virtualService": "chat",
    "incumbentDestination": {"host": "chat-v1"},
    "candidateDestination": {"host": "chat-v2"},
}


REWRITE = "spec.trafficRouting.inferenceModelRewrite"


def adapters(
    incumbent: dict[str, str], candidate: dict[str, str], routing: dict[str, Any] | None = None
) -> Edit:
    """Two adapter sides (each an inferencePool and an adapter), split by an InferenceModelRewrite
    unless `routing` says otherwise."""
    chosen = {"inferenceModelRewrite": {"name": "chat-adapters"}} if routing is None else routing
    return edits(
        put("spec.incumbent", incumbent), put("spec.candidate", candidate), put("spec.trafficRouting", chosen)
    )


LWS_V2 = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "name": "chat-v2"}
ADAPTER_V1 = {"inferencePool": "base", "adapter": "chat-lora-v1"}
ADAPTER_V2 = {"inferencePool": "base", "adapter": "chat-lora-v2"}


def routes(*refs: dict[str, Any]) -> Edit:
    """The gateway router naming several routes instead of one."""
    return edits(drop(f"{ROUTE}.httpRoute"), put(f"{ROUTE}.routes", list(refs)))


def istio(**changes: Any) -> Edit:
    """The Istio router instead of the gateway's; a change to None drops that field."""
    routing = {key: value for key, value in {**ISTIO_ROUTING, **changes}.items() if value is not None}
    return put("spec.trafficRouting", {"istio": routing})


EVALUATOR: dict[str, Any] = {"testSet": {"configMap": {"name": "qa", "key": "set.jsonl"}}}


def gate_check(check: dict[str, Any]) -> Edit:
    """A gate with one check named `quality`, the rest as given."""
    return put("spec.gate", {"checks": [{"name": "quality", **check}]})


RECEIVER = {"name": "ops", "kind": "webhook", "urlSecretRef": {"name": "hooks", "key": "ops"}}

# The newest requests a refusal proxy recorded (its --record prefix).
RECORDED = {"s3": {"url": "s3://recordings/chat/chat-v1", "secret": "s3"}, "last": 500}
BAD_ROLLOUTS: dict[str, BadRollout] = {
    # Wrong types.
    "weight as a string": BadRollout(put(f"{STEP0}.setWeight", "10"), "spec.steps[0].setWeight"),
    "steps as an object": BadRollout(put("spec.steps", {"setWeight": 10}), "spec.steps"),
    # Steps may be left out only for a policy's (spec.policyRef).
    "no steps and no policy": BadRollout(drop("spec.steps"), "spec.steps"),
    "policy of another kind": BadRollout(
        edits(drop("spec.steps"), put("spec.policyRef", {"kind": "RolloutPolicy", "name": "p"})),
        "spec.policyRef.kind",
    ),
    "minRequests as a word": BadRollout(
        put("spec.analysis.minRequests", "many"), "spec.analysis.minRequests"
    ),
    "max as a string": BadRollout(put(f"{METRIC0}.max", "0.01"), "spec.analysis.metrics[0].max"),
    "latency max with its unit": BadRollout(
        put("spec.analysis.metrics.1.max", "250ms"), "spec.analysis.metrics[1].max"
    ),
    "dryRun as a string": BadRollout(put(f"{METRIC0}.dryRun", "yes"), "spec.analysis.metrics[0].dryRun"),
    "fractional rule index": BadRollout(put(f"{ROUTE}.ruleIndex", 1.5), f"{ROUTE}.ruleIndex"),
    "incumbent as a string": BadRollout(put("spec.incumbent", "chat-v1"), "spec.incumbent"),
    # Weights.
    "negative weight": BadRollout(put(f"{STEP0}.setWeight", -1), "spec.steps[0].setWeight"),
    "weight 101": BadRollout(put(f"{STEP0}.setWeight", 101), "spec.steps[0].setWeight"),
    "weight 150": BadRollout(put("spec.steps.2.setWeight", 150), "spec.steps[2].setWeight"),
    # Steps.
    "no steps": BadRollout(put("spec.steps", []), "spec.steps"),
    "steps missing": BadRollout(drop("spec.steps"), "spec.steps"),
    "51 steps": BadRollout(put("spec.steps", [{"setWeight": 1}] * 51), "spec.steps"),
    "a step of neither kind": BadRollout(put(STEP0, {}), "spec.steps[0]"),
    "a step of both kinds": BadRollout(put(STEP0, {"setWeight": 10, "pause": {}}), "spec.steps[0]"),
    "a weight and a mirror": BadRollout(
        put(STEP0, {"setWeight": 10, "mirror": {"percent": 10, "duration": "1m"}}), "spec.steps[0]"
    ),
    "mirror of 0%": BadRollout(
        put(STEP0, {"mirror": {"percent": 0, "duration": "1m"}}), "spec.steps[0].mirror.percent"
    ),
    "mirror of 101%": BadRollout(
        put(STEP0, {"mirror": {"percent": 101, "duration": "1m"}}), "spec.steps[0].mirror.percent"
    ),
    "mirror without a duration": BadRollout(
        put(STEP0, {"mirror": {"percent": 10}}), "spec.steps[0].mirror.duration"
    ),
    "mirror for 0s": BadRollout(
        put(STEP0, {"mirror": {"percent": 10, "duration": "0s"}}), "spec.steps[0].mirror.duration"
    ),
    # Pruned by the API server, which leaves a step of neither kind.
    "an unknown step kind": BadRollout(put(STEP0, {"analysis": {"templates": []}}), "spec.steps[0]"),
    # Durations.
    "pause in words": BadRollout(
        put("spec.steps.1.pause.duration", "5 minutes"), "spec.steps[1].pause.duration"
    ),
    "negative pause": BadRollout(put("spec.steps.1.pause.duration", "-5s"), "spec.steps[1].pause.duration"),
    "pause in days": BadRollout(put("spec.steps.1.pause.duration", "1d"), "spec.steps[1].pause.duration"),
    "pause of 114,000 years": BadRollout(
        put("spec.steps.1.pause.duration", "1000000000h"), "spec.steps[1].pause.duration", bound="876000h"
    ),
    "pause just over 100 years": BadRollout(
        put("spec.steps.1.pause.duration", "876000h1s"), "spec.steps[1].pause.duration", bound="876000h"
    ),
    "pause just past Go's limit": BadRollout(
        put("spec.steps.1.pause.duration", "2562048h"), "spec.steps[1].pause.duration", bound="876000h"
    ),
    "pause past Go's limit in minutes": BadRollout(
        put("spec.steps.1.pause.duration", "153722868m"), "spec.steps[1].pause.duration", bound="876000h"
    ),
    "pause too long to parse": BadRollout(
        put("spec.steps.1.pause.duration", "99999999999999999999h"),
        "spec.steps[1].pause.duration",
        bound="876000h",
    ),
    "pause units smallest first": BadRollout(
        put("spec.steps.1.pause.duration", "30s1m"), "spec.steps[1].pause.duration"
    ),
    "pause repeating a unit": BadRollout(
        put("spec.steps.1.pause.duration", "1000000h1000000h1000000h"), "spec.steps[1].pause.duration"
    ),
    "interval of a millisecond": BadRollout(
        put("spec.analysis.interval", "1ms"), "spec.analysis.interval", bound="1s"
    ),
    "interval just under a second": BadRollout(
        put("spec.analysis.interval", "999ms"), "spec.analysis.interval", bound="1s"
    ),
    "interval past Go's limit": BadRollout(
        put("spec.analysis.interval", "3000000h"), "spec.analysis.interval", bound="876000h"
    ),
    "timeout over a minute": BadRollout(
        put(f"{PROMETHEUS}.timeout", "61s"), f"{PROMETHEUS}.timeout", bound="60s"
    ),
    "timeout of 100 years": BadRollout(
        put(f"{PROMETHEUS}.timeout", "876000h"), f"{PROMETHEUS}.timeout", bound="60s"
    ),
    "timeout past Go's limit": BadRollout(
        put(f"{PROMETHEUS}.timeout", "3000000h"), f"{PROMETHEUS}.timeout", bound="876000h"
    ),
    "zero interval": BadRollout(put("spec.analysis.interval", "0s"), "spec.analysis.interval"),
    "interval without a unit": BadRollout(put("spec.analysis.interval", "30"), "spec.analysis.interval"),
    "zero timeout": BadRollout(put(f"{PROMETHEUS}.timeout", "0ms"), f"{PROMETHEUS}.timeout"),
    "zero deadline": BadRollout(
        put("spec.progressDeadlines.pending.after", "0s"), "spec.progressDeadlines.pending.after"
    ),
    "deadline of 228 years": BadRollout(
        put("spec.progressDeadlines.pending.after", "2000000h"),
        "spec.progressDeadlines.pending.after",
        bound="876000h",
    ),
    "zero gradual rollback": BadRollout(
        put("spec.rollback.gradual", {"duration": "0s"}), "spec.rollback.gradual.duration"
    ),
    "gradual rollback without a duration": BadRollout(
        put("spec.rollback.gradual", {}), "spec.rollback.gradual.duration"
    ),
    # Rollback and capacity.
    "unknown onDelete": BadRollout(put("spec.rollback.onDelete", "Keep"), "spec.rollback.onDelete"),
    "capacity enforce as a string": BadRollout(
        put("spec.capacity", {"enforce": "yes"}), "spec.capacity.enforce"
    ),
    # Bounds of the presets.
    "errorRate max -1": BadRollout(put(f"{METRIC0}.max", -1), "spec.analysis.metrics[0].max"),
    "errorRate max 1.5": BadRollout(put(f"{METRIC0}.max", 1.5), "spec.analysis.metrics[0].max"),
    "refusalRate min 2": BadRollout(put("spec.analysis.metrics.2.min", 2), "spec.analysis.metrics[2].min"),
    "latencyP99 max 0": BadRollout(put("spec.analysis.metrics.1.max", 0), "spec.analysis.metrics[1].max"),
    "latencyP99 max -2.5": BadRollout(
        put("spec.analysis.metrics.1.max", -2.5), "spec.analysis.metrics[1].max"
    ),
    "tokensPerSecond max -5": BadRollout(
        put(METRIC0, {"name": "tps", "preset": "tokensPerSecond", "max": -5}), "spec.analysis.metrics[0].max"
    ),
    "tokensPerSecond min -1": BadRollout(
        put(METRIC0, {"name": "tps", "preset": "tokensPerSecond", "min": -1}), "spec.analysis.metrics[0].min"
    ),
    "queueDepth max -1": BadRollout(
        put(METRIC0, {"name": "queue", "preset": "queueDepth", "max": -1}), "spec.analysis.metrics[0].max"
    ),
    "min above max": BadRollout(put(f"{METRIC0}.min", 0.5), "spec.analysis.metrics[0].min"),
    # Comparisons and sequential tests.
    "maxRatio 0": BadRollout(
        put(f"{METRIC0}.compare", {"maxRatio": 0}), "spec.analysis.metrics[0].compare.maxRatio"
    ),
    "negative maxRatio": BadRollout(
        put(f"{METRIC0}.compare", {"maxRatio": -1.2}), "spec.analysis.metrics[0].compare.maxRatio"
    ),
    "compare with neither bound": BadRollout(
        put(f"{METRIC0}.compare", {}), "spec.analysis.metrics[0].compare"
    ),
    "negative maxIncrease": BadRollout(
        put(f"{METRIC0}.compare", {"maxIncrease": -0.1}), "spec.analysis.metrics[0].compare.maxIncrease"
    ),
    "alpha 0": BadRollout(
        put(f"{METRIC0}.sequential", {"alpha": 0}), "spec.analysis.metrics[0].sequential.alpha"
    ),
    "alpha 0.6": BadRollout(
        put(f"{METRIC0}.sequential", {"alpha": 0.6}), "spec.analysis.metrics[0].sequential.alpha"
    ),
    "marginIncrease 0": BadRollout(
        put(f"{METRIC0}.sequential", {"marginIncrease": 0}),
        "spec.analysis.metrics[0].sequential.marginIncrease",
    ),
    "marginIncrease 0.6": BadRollout(
        put(f"{METRIC0}.sequential", {"marginIncrease": 0.6}),
        "spec.analysis.metrics[0].sequential.marginIncrease",
    ),
    "margin and marginIncrease": BadRollout(
        put(f"{METRIC0}.sequential", {"margin": 1.5, "marginIncrease": 0.001}),
        "spec.analysis.metrics[0].sequential.marginIncrease",
    ),
    "sequential on a latency": BadRollout(
        put("spec.analysis.metrics.1.sequential", {}), "spec.analysis.metrics[1].sequential"
    ),
    # Metrics: one of preset or query, and what each allows.
    "preset and query": BadRollout(put(f"{METRIC0}.query", "up"), "spec.analysis.metrics[0]"),
    "neither preset nor query": BadRollout(drop(f"{METRIC0}.preset"), "spec.analysis.metrics[0]"),
    "no bound": BadRollout(drop(f"{METRIC0}.max"), "spec.analysis.metrics[0]"),
    "unknown preset": BadRollout(put(f"{METRIC0}.preset", "accuracy"), "spec.analysis.metrics[0].preset"),
    "source on a query": BadRollout(
        put(METRIC0, {"name": "q", "query": "up", "max": 1, "source": "vllm"}),
        "spec.analysis.metrics[0].source",
    ),
    "slowRequestRate without threshold": BadRollout(
        put(METRIC0, {"name": "slow", "preset": "slowRequestRate", "max": 0.1}),
        "spec.analysis.metrics[0].threshold",
    ),
    "threshold on errorRate": BadRollout(
        put(f"{METRIC0}.threshold", 1), "spec.analysis.metrics[0].threshold"
    ),
    # Goodput and cost (docs/metric-presets.md#goodput-and-cost).
    "goodput without targets": BadRollout(
        put(METRIC0, {"name": "goodput", "preset": "goodputPerAccelerator", "compare": {"minRatio": 0.9}}),
        "spec.analysis.metrics[0].goodput",
    ),
    "goodput target of 0": BadRollout(
        put(METRIC0, {**GOODPUT, "goodput": {"ttft": 0, "tpot": 0.05}}),
        "spec.analysis.metrics[0].goodput.ttft",
    ),
    "goodput targets on errorRate": BadRollout(
        put(f"{METRIC0}.goodput", {"ttft": 1, "tpot": 1}), "spec.analysis.metrics[0].goodput"
    ),
    "minRatio 0": BadRollout(
        put(METRIC0, {**GOODPUT, "compare": {"minRatio": 0}}), f"{METRIC0_FIELD}.compare.minRatio"
    ),
    "minRatio with confidence": BadRollout(
        put(f"{METRIC0}.compare", {"minRatio": 0.9, "confidence": {}}), f"{METRIC0_FIELD}.compare.minRatio"
    ),
    "confidence on a gauge": BadRollout(
        put(METRIC0, {"name": "q", "preset": "queueDepth", "compare": {"maxRatio": 1.2, "confidence": {}}}),
        f"{METRIC0_FIELD}.compare.confidence",
    ),
    "maxIncrease with confidence on a latency": BadRollout(
        put(METRIC0, {"name": "t", "preset": "ttftP99", "compare": {"maxIncrease": 0.1, "confidence": {}}}),
        f"{METRIC0_FIELD}.compare.maxIncrease",
    ),
    "confidence margin on a rate": BadRollout(
        put(f"{METRIC0}.compare", {"maxRatio": 1.5, "confidence": {"margin": 2}}),
        f"{METRIC0_FIELD}.compare.confidence.margin",
    ),
    "confidence margin below 1": BadRollout(
        put(
            METRIC0,
            {"name": "t", "preset": "ttftP99", "compare": {"maxRatio": 1.2, "confidence": {"margin": 0.5}}},
        ),
        f"{METRIC0_FIELD}.compare.confidence.margin",
    ),
    "cost without prices": BadRollout(
        put(METRIC0, {"name": "cost", "preset": "costPerMillionTokens", "compare": {"maxRatio": 1.2}}),
        "spec.analysis.accelerators",
    ),
    "accelerator resource with a space": BadRollout(
        put("spec.analysis.accelerators", {"resourceName": "nvidia.com/gpu x"}),
        "spec.analysis.accelerators.resourceName",
    ),
    "zero accelerators": BadRollout(
        put("spec.analysis.accelerators", {"candidate": {"count": 0}}),
        "spec.analysis.accelerators.candidate.count",
    ),
    "negative price": BadRollout(
        put("spec.analysis.accelerators", {"incumbent": {"pricePerHour": -1}}),
        "spec.analysis.accelerators.incumbent.pricePerHour",
    ),
    # Issue 34: admitted, 1e308 overflowed the cost to infinity and failed every tick.
    "price per hour of 1e308": BadRollout(
        put("spec.analysis.accelerators", {"candidate": {"pricePerHour": 1e308}}),
        "spec.analysis.accelerators.candidate.pricePerHour",
    ),
    "a billion accelerators": BadRollout(
        put("spec.analysis.accelerators", {"incumbent": {"count": 1e9}}),
        "spec.analysis.accelerators.incumbent.count",
    ),
    "a metric bound of 1e300": BadRollout(put(f"{METRIC0}.max", 1e300), f"{METRIC0_FIELD}.max"),
    "failureLimit over a million": BadRollout(
        put(f"{METRIC0}.failureLimit", 1_000_001), f"{METRIC0_FIELD}.failureLimit"
    ),
    "maxConsecutiveErrors of 2^63-1": BadRollout(
        put("spec.rollback.maxConsecutiveErrors", 2**63 - 1), "spec.rollback.maxConsecutiveErrors"
    ),
    "rule index past Gateway API's 16 rules": BadRollout(put(f"{ROUTE}.ruleIndex", 16), f"{ROUTE}.ruleIndex"),
    "unknown source": BadRollout(put("spec.analysis.source", "vllm2"), "spec.analysis.source"),
    "negative failureLimit": BadRollout(
        put(f"{METRIC0}.failureLimit", -1), "spec.analysis.metrics[0].failureLimit"
    ),
    "unknown failureLimitScope": BadRollout(
        put(f"{METRIC0}.failureLimitScope", "forever"), "spec.analysis.metrics[0].failureLimitScope"
    ),
    "no metrics": BadRollout(put("spec.analysis.metrics", []), "spec.analysis.metrics"),
    "duplicate metric names": BadRollout(
        put("spec.analysis.metrics.1.name", "error-rate"), "spec.analysis.metrics[1]"
    ),
    "empty query": BadRollout(
        put(METRIC0, {"name": "q", "query": "", "max": 1}), "spec.analysis.metrics[0].query"
    ),
    # Names (DNS-1123).
    "metric name not a label": BadRollout(
        put(f"{METRIC0}.name", "Error_Rate"), "spec.analysis.metrics[0].name"
    ),
    "metric name of 64 characters": BadRollout(
        put(f"{METRIC0}.name", "e" * 64), "spec.analysis.metrics[0].name"
    ),
    "deployment with capitals": BadRollout(
        put("spec.candidate.deployment", "Chat_V2"), "spec.candidate.deployment"
    ),
    "deployment starting with a dash": BadRollout(
        put("spec.incumbent.deployment", "-chat"), "spec.incumbent.deployment"
    ),
    "candidate equal to incumbent": BadRollout(
        put("spec.candidate.deployment", "chat-v1"), "spec.candidate.deployment"
    ),
    # InferencePool sides (docs/inference-pools.md).
    "deployment and inferencePool both set": BadRollout(
        put("spec.candidate.inferencePool", "chat-v2"), "spec.candidate"
    ),
    "neither deployment nor inferencePool": BadRollout(drop("spec.incumbent.deployment"), "spec.incumbent"),
    "pool name with capitals": BadRollout(
        put("spec.candidate", {"inferencePool": "Pool_V2"}), "spec.candidate.inferencePool"
    ),
    "pool backend named other than the pool": BadRollout(
        put("spec.candidate", {"inferencePool": "pool-v2"}), f"{ROUTE}.candidateBackend"
    ),
    # Workload sides (docs/topologies/leaderworkerset.md).
    "workload and deployment both set": BadRollout(put("spec.candidate.workload", LWS_V2), "spec.candidate"),
    "workload naming an InferencePool": BadRollout(
        put(
            "spec.candidate",
            {"workload": {**LWS_V2, "apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool"}},
        ),
        "spec.candidate.workload.kind",
    ),
    "workload kind in lowercase": BadRollout(
        put("spec.candidate", {"workload": {**LWS_V2, "kind": "leaderWorkerSet"}}),
        "spec.candidate.workload.kind",
    ),
    "workload apiVersion without a version": BadRollout(
        put("spec.candidate", {"workload": {**LWS_V2, "apiVersion": "leaderworkerset.x-k8s.io"}}),
        "spec.candidate.workload.apiVersion",
    ),
    "workload equal to incumbent": BadRollout(
        edits(put("spec.incumbent", {"workload": LWS_V2}), put("spec.candidate", {"workload": LWS_V2})),
        "spec.candidate.workload",
    ),
    "workload spelling the incumbent Deployment": BadRollout(
        put(
            "spec.candidate", {"workload": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "chat-v1"}}
        ),
        "spec.candidate.workload",
    ),
    "deployment that the incumbent workload spells": BadRollout(
        put(
            "spec.incumbent", {"workload": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "chat-v2"}}
        ),
        "spec.candidate.deployment",
    ),
    # Adapter sides (docs/inference-pools.md, "Adapter rollouts").
    "adapter without a pool": BadRollout(
        put("spec.candidate.adapter", "chat-lora-v2"), "spec.candidate.adapter"
    ),
    "adapter with quotes": BadRollout(
        adapters(ADAPTER_V1, {**ADAPTER_V2, "adapter": 'lora"}'}), "spec.candidate.adapter"
    ),
    "the same adapter on both sides": BadRollout(adapters(ADAPTER_V1, ADAPTER_V1), "spec.candidate.adapter"),
    "adapters on two pools": BadRollout(
        adapters(ADAPTER_V1, {**ADAPTER_V2, "inferencePool": "other"}), REWRITE
    ),
    "one adapter side and one pool side": BadRollout(
        adapters(ADAPTER_V1, {"inferencePool": "base-v2"}), REWRITE
    ),
    "adapter sides with the gatewayAPI router": BadRollout(
        adapters(
            ADAPTER_V1,
            ADAPTER_V2,
            {"gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "base", "candidateBackend": "base-x"}},
        ),
        "spec.trafficRouting",
    ),
    "negative rewrite rule index": BadRollout(
        adapters(
            ADAPTER_V1, ADAPTER_V2, {"inferenceModelRewrite": {"name": "chat-adapters", "ruleIndex": -1}}
        ),
        f"{REWRITE}.ruleIndex",
    ),
    "empty route name": BadRollout(put(f"{ROUTE}.httpRoute", ""), f"{ROUTE}.httpRoute"),
    "same backends": BadRollout(put(f"{ROUTE}.candidateBackend", "chat-v1"), f"{ROUTE}.candidateBackend"),
    "no router": BadRollout(put("spec.trafficRouting", {}), "spec.trafficRouting"),
    "two routers": BadRollout(put(ISTIO, ISTIO_ROUTING), "spec.trafficRouting"),
    # Routes and VirtualServices: in the rollout's namespace, named exactly one way.
    "route in another namespace": BadRollout(put(f"{ROUTE}.httpRoute", "other/chat"), f"{ROUTE}.httpRoute"),
    "both httpRoute and routes": BadRollout(put(f"{ROUTE}.routes", [{"httpRoute": "chat"}]), ROUTE),
    "both httpRoute and grpcRoute": BadRollout(put(f"{ROUTE}.grpcRoute", "chat"), ROUTE),
    "no route at all": BadRollout(drop(f"{ROUTE}.httpRoute"), ROUTE),
    "ruleIndex beside routes": BadRollout(
        edits(routes({"httpRoute": "chat"}), put(f"{ROUTE}.ruleIndex", 1)), f"{ROUTE}.ruleIndex"
    ),
    "a route ref of both kinds": BadRollout(
        routes({"httpRoute": "chat", "grpcRoute": "chat"}), f"{ROUTE}.routes[0]"
    ),
    "the same rule twice": BadRollout(
        routes({"httpRoute": "chat"}, {"httpRoute": "chat"}), f"{ROUTE}.routes"
    ),
    "VirtualService in another namespace": BadRollout(
        istio(virtualService="other/chat"), f"{ISTIO}.virtualService"
    ),
    "both virtualService and virtualServices": BadRollout(istio(virtualServices=[{"name": "chat"}]), ISTIO),
    "routes beside virtualServices": BadRollout(
        istio(virtualService=None, virtualServices=[{"name": "chat"}], routes=["primary"]), f"{ISTIO}.routes"
    ),
    "same destinations": BadRollout(
        istio(candidateDestination={"host": "chat-v1"}), f"{ISTIO}.candidateDestination"
    ),
    "InferencePool side with the Istio router": BadRollout(
        edits(istio(), put("spec.candidate", {"inferencePool": "chat-v2"})), ISTIO
    ),
    "Secret name with a space": BadRollout(
        put(f"{PROMETHEUS}.bearerTokenSecretRef.name", "prom token"),
        f"{PROMETHEUS}.bearerTokenSecretRef.name",
    ),
    "Secret key with a slash": BadRollout(
        put(f"{PROMETHEUS}.bearerTokenSecretRef.key", "a/b"), f"{PROMETHEUS}.bearerTokenSecretRef.key"
    ),
    "rollout name with capitals": BadRollout(put("metadata.name", "Bad_Name"), "metadata.name"),
    # URLs.
    "address without a scheme": BadRollout(
        put(f"{PROMETHEUS}.address", "prometheus:9090"), f"{PROMETHEUS}.address"
    ),
    "ftp address": BadRollout(put(f"{PROMETHEUS}.address", "ftp://prometheus"), f"{PROMETHEUS}.address"),
    "address without a host": BadRollout(put(f"{PROMETHEUS}.address", "http://"), f"{PROMETHEUS}.address"),
    "address with a space": BadRollout(
        put(f"{PROMETHEUS}.address", "http://prom etheus"), f"{PROMETHEUS}.address"
    ),
    "address with a password": BadRollout(
        put(f"{PROMETHEUS}.address", "http://admin:pw@prometheus:9090"), f"{PROMETHEUS}.address"
    ),
    "address whose fragment cuts off the path": BadRollout(
        put(f"{PROMETHEUS}.address", "http://prometheus:9090/#"), f"{PROMETHEUS}.address"
    ),
    "metadata address": BadRollout(
        put(f"{PROMETHEUS}.address", "http://169.254.169.254/latest"), f"{PROMETHEUS}.address"
    ),
    "metadata address in decimal": BadRollout(
        put(f"{PROMETHEUS}.address", "http://2852039166/"), f"{PROMETHEUS}.address"
    ),
    "loopback in fullwidth digits": BadRollout(
        put(f"{PROMETHEUS}.address", f"http://{fullwidth('127.0.0.1')}:9090"), f"{PROMETHEUS}.address"
    ),
    "loopback with ideographic full stops": BadRollout(
        put(
            f"{PROMETHEUS}.address",
            f"http://{'127.0.0.1'.replace('.', IDEOGRAPHIC_FULL_STOP)}:9090",
        ),
        f"{PROMETHEUS}.address",
    ),
    "judge at the metadata address in enclosed digits": BadRollout(
        gate_check(
            {
                "evaluator": {
                    **EVALUATOR,
                    "judge": {"url": f"http://{CIRCLED_16_9}.254.169.254/v1", "model": "j"},
                }
            }
        ),
        "spec.gate.checks[0].evaluator.judge.url",
    ),
    "address with an empty host label": BadRollout(
        put(f"{PROMETHEUS}.address", "http://prometheus..monitoring:9090"), f"{PROMETHEUS}.address"
    ),
    "localhost address": BadRollout(
        put(f"{PROMETHEUS}.address", "http://localhost:9090"), f"{PROMETHEUS}.address"
    ),
    "judge at the metadata address": BadRollout(
        gate_check({"evaluator": {**EVALUATOR, "judge": {"url": "http://169.254.169.254/v1", "model": "j"}}}),
        "spec.gate.checks[0].evaluator.judge.url",
    ),
    "test set URL with a password": BadRollout(
        gate_check({"evaluator": {"testSet": {"url": "https://admin:pw@sets.example/qa.jsonl"}}}),
        "spec.gate.checks[0].evaluator.testSet.url",
    ),
    "test set path out of its volume": BadRollout(
        gate_check(
            {
                "evaluator": {
                    "testSet": {"persistentVolumeClaim": {"claimName": "sets", "path": "a/../../../etc"}}
                }
            }
        ),
        "spec.gate.checks[0].evaluator.testSet.persistentVolumeClaim.path",
    ),
    "test set key climbing out of its prefix": BadRollout(
        gate_check(
            {"evaluator": {"testSet": {"s3": {"url": "s3://sets/team/../other/qa.jsonl", "secret": "s3"}}}}
        ),
        "spec.gate.checks[0].evaluator.testSet.s3.url",
    ),
    "test set bucket named as an IP address": BadRollout(
        gate_check(
            {"evaluator": {"testSet": {"s3": {"url": "s3://169.254.169.254/qa.jsonl", "secret": "s3"}}}}
        ),
        "spec.gate.checks[0].evaluator.testSet.s3.url",
    ),
    "test set bucket with '.-' inside it": BadRollout(
        gate_check({"evaluator": {"testSet": {"s3": {"url": "s3://ml.-evals/qa.jsonl", "secret": "s3"}}}}),
        "spec.gate.checks[0].evaluator.testSet.s3.url",
    ),
    "results prefix bucket with '-.' inside it": BadRollout(
        put(
            "spec.gate",
            {
                "checks": [{"name": "quality", "evaluator": EVALUATOR}],
                "results": {"s3": {"url": "s3://ml-.results/gate", "secret": "s3"}},
            },
        ),
        "spec.gate.results.s3.url",
    ),
    "results prefix with an empty segment": BadRollout(
        put(
            "spec.gate",
            {
                "checks": [{"name": "quality", "evaluator": EVALUATOR}],
                "results": {"s3": {"url": "s3://results//x", "secret": "s3"}},
            },
        ),
        "spec.gate.results.s3.url",
    ),
    # Pod regular expressions.
    "pod regex with a quote": BadRollout(
        put("spec.candidate.podRegex", 'chat-v2-.*"} or up{'), "spec.candidate.podRegex"
    ),
    "pod regex that does not compile": BadRollout(
        put("spec.incumbent.podRegex", "chat-v1-(.*"), "spec.incumbent.podRegex"
    ),
    "model name with a quote": BadRollout(
        put("spec.candidate.model", 'llama"} or up{'), "spec.candidate.model"
    ),
    # Policies.
    "unknown Prometheus error policy": BadRollout(
        put("spec.rollback.onPrometheusError", "ignore"), "spec.rollback.onPrometheusError"
    ),
    "zero consecutive errors": BadRollout(
        put("spec.rollback.maxConsecutiveErrors", 0), "spec.rollback.maxConsecutiveErrors"
    ),
    "unknown deadline action": BadRollout(
        put("spec.progressDeadlines.pending.action", "explode"), "spec.progressDeadlines.pending.action"
    ),
    # Required fields.
    "candidate missing": BadRollout(drop("spec.candidate"), "spec.candidate"),
    # One edit per upgrade (spec.candidatePatch).
    "both a candidate and a candidatePatch": BadRollout(
        put("spec.candidatePatch", {"image": "vllm:2"}), "spec.candidate"
    ),
    "a candidatePatch with a candidateBackend": BadRollout(
        edits(drop("spec.candidate"), put("spec.candidatePatch", {"image": "vllm:2"})),
        "spec.trafficRouting.gatewayAPI.candidateBackend",
    ),
    "a candidatePatch patching nothing": BadRollout(
        edits(
            drop("spec.candidate"),
            drop("spec.trafficRouting.gatewayAPI.candidateBackend"),
            put("spec.candidatePatch", {"container": "server"}),
        ),
        "spec.candidatePatch",
    ),
    "a candidatePatch of an InferencePool": BadRollout(
        edits(
            drop("spec.candidate"),
            drop("spec.trafficRouting.gatewayAPI.candidateBackend"),
            put("spec.incumbent", {"inferencePool": "chat-v1"}),
            put("spec.candidatePatch", {"image": "vllm:2"}),
        ),
        "spec.candidatePatch",
    ),
    "a candidatePatch of a grouped incumbent": BadRollout(
        edits(
            drop("spec.candidate"),
            drop("spec.trafficRouting.gatewayAPI.candidateBackend"),
            put("spec.incumbent.members", [{"role": "decode", "deployment": "chat-v1"}]),
            put("spec.candidatePatch", {"image": "vllm:2"}),
        ),
        "spec.candidatePatch",
    ),
    # A workload is one side's: never scaled down, judged or taken off the route as the other's.
    "one Deployment in both groups": BadRollout(
        edits(
            put(
                "spec.incumbent.members",
                [
                    {"role": "prefill", "deployment": "chat-prefill"},
                    {"role": "decode", "deployment": "chat-v1"},
                ],
            ),
            put(
                "spec.candidate.members",
                [
                    {"role": "prefill", "deployment": "chat-prefill"},
                    {"role": "decode", "deployment": "chat-v2"},
                ],
            ),
        ),
        "spec.candidate.members",
    ),
    "the candidate's Deployment a member of the incumbent's group": BadRollout(
        edits(
            put("spec.incumbent.members", [{"role": "decode", "deployment": "chat-v2"}]),
            put("spec.candidate.members", [{"role": "decode", "deployment": "chat-v2-decode"}]),
        ),
        "spec.candidate.deployment",
    ),
    "Prometheus missing": BadRollout(drop(PROMETHEUS), PROMETHEUS),
    # The evaluation gate.
    "a gate check of both kinds": BadRollout(
        gate_check({"evaluator": EVALUATOR, "job": {"image": "check:1"}}), "spec.gate.checks[0]"
    ),
    "a gate check of neither kind": BadRollout(gate_check({}), "spec.gate.checks[0]"),
    "a tokens ratio of 0": BadRollout(
        gate_check({"evaluator": EVALUATOR, "policy": {"maxTokensRatio": 0}}),
        "spec.gate.checks[0].policy.maxTokensRatio",
    ),
    "a capability's tokens ratio as a word": BadRollout(
        gate_check(
            {"evaluator": EVALUATOR, "policy": {"capabilityTokensRatios": [{"name": "math", "max": "2x"}]}}
        ),
        "spec.gate.checks[0].policy.capabilityTokensRatios[0].max",
    ),
    "an evaluator with only a judge": BadRollout(
        gate_check({"evaluator": {"judge": {"url": "http://judge:8000/v1", "model": "judge"}}}),
        "spec.gate.checks[0].evaluator",
    ),
    "a test set from two sources": BadRollout(
        gate_check(
            {"evaluator": {"testSet": {**EVALUATOR["testSet"], "url": "https://sets.example/qa.jsonl"}}}
        ),
        "spec.gate.checks[0].evaluator.testSet",
    ),
    "a replay set from a ConfigMap and storage": BadRollout(
        gate_check(
            {
                "evaluator": {
                    "replay": {**EVALUATOR["testSet"], "s3": {"url": "s3://sets/r.jsonl", "secret": "s3"}}
                }
            }
        ),
        "spec.gate.checks[0].evaluator.replay",
    ),
    "a parallel check of your own": BadRollout(
        gate_check({"job": {"image": "check:1"}, "parallelism": 2}), "spec.gate.checks[0].parallelism"
    ),
    "an evaluator in 17 Pods": BadRollout(
        gate_check({"evaluator": EVALUATOR, "parallelism": 17}), "spec.gate.checks[0].parallelism"
    ),
    "an evaluator in no Pod": BadRollout(
        gate_check({"evaluator": EVALUATOR, "parallelism": 0}), "spec.gate.checks[0].parallelism"
    ),
    "recorded requests and a file to replay": BadRollout(
        gate_check({"evaluator": {"replay": {**EVALUATOR["testSet"], "recorded": RECORDED}}}),
        "spec.gate.checks[0].evaluator.replay",
    ),
    "recorded requests sampled": BadRollout(
        gate_check({"evaluator": {"replay": {"recorded": RECORDED, "sample": 10}}}),
        "spec.gate.checks[0].evaluator.replay",
    ),
    "recorded requests under an object URL's parent": BadRollout(
        gate_check(
            {
                "evaluator": {
                    "replay": {"recorded": {**RECORDED, "s3": {"url": "s3://rec/a/../b", "secret": "s3"}}}
                }
            }
        ),
        "spec.gate.checks[0].evaluator.replay.recorded.s3.url",
    ),
    "none of the newest recorded requests": BadRollout(
        gate_check({"evaluator": {"replay": {"recorded": {**RECORDED, "last": 0}}}}),
        "spec.gate.checks[0].evaluator.replay.recorded.last",
    ),
    "win-rate confidence 1": BadRollout(
        gate_check(
            {"job": {"image": "check:1"}, "policy": {"winRate": {"minLowerBound": 0.5, "confidence": 1}}}
        ),
        "spec.gate.checks[0].policy.winRate.confidence",
    ),
    "a gate check timeout of 0s": BadRollout(
        gate_check({"job": {"image": "check:1"}, "timeout": "0s"}), "spec.gate.checks[0].timeout"
    ),
    "a gate check onError Retry": BadRollout(
        gate_check({"job": {"image": "check:1"}, "onError": "Retry"}), "spec.gate.checks[0].onError"
    ),
    "a full release starting past the steps": BadRollout(
        edits(
            gate_check({"job": {"image": "check:1"}}),
            put("spec.gate.full", {"allowed": True, "startAtStep": 3}),
        ),
        "spec.gate.full.startAtStep",
    ),
    # Only the operator can see these: what the spec names does not exist, or no query can be built.
    "route that does not exist": _operator(put(f"{ROUTE}.httpRoute", "no-such-route"), f"{ROUTE}.httpRoute"),
    "rule index past the route's rules": _operator(put(f"{ROUTE}.ruleIndex", 3), f"{ROUTE}.ruleIndex"),
    "pool side whose backendRef is a Service": _operator(
        put("spec.candidate", {"inferencePool": "chat-v2"}), f"{ROUTE}.candidateBackend"
    ),
    "backend not in the route": _operator(
        put(f"{ROUTE}.candidateBackend", "chat-v3"), f"{ROUTE}.candidateBackend"
    ),
    # tests/cluster/test_bad_manifests.py makes this route: its chat-v2 is an InferencePool.
    "backend of another kind": _operator(put(f"{ROUTE}.httpRoute", "chat-pool"), f"{ROUTE}.candidateBackend"),
    "second route that does not exist": _operator(
        routes({"httpRoute": "chat"}, {"httpRoute": "no-such-route"}), f"{ROUTE}.routes[1].httpRoute"
    ),
    "GRPCRoute that does not exist": _operator(
        edits(drop(f"{ROUTE}.httpRoute"), put(f"{ROUTE}.grpcRoute", "chat")), f"{ROUTE}.grpcRoute"
    ),
    "VirtualService that does not exist": _operator(istio(), f"{ISTIO}.virtualService"),
    "InferenceModelRewrite that does not exist": _operator(
        adapters(ADAPTER_V1, ADAPTER_V2), f"{REWRITE}.name"
    ),
    "query with an unknown variable": _operator(
        put(METRIC0, {"name": "q", "query": "up{pod=~'{{ model }}'}", "max": 1}),
        "spec.analysis.metrics[0].query",
    ),
    "query with a broken placeholder": _operator(
        put(METRIC0, {"name": "q", "query": "up{pod=~'{{ candidate.podRegex }'}", "max": 1}),
        "spec.analysis.metrics[0].query",
    ),
    "preset the source does not export": _operator(
        put(METRIC0, {"name": "queue", "preset": "queueDepth", "source": "istio", "max": 10}),
        "spec.analysis.metrics[0].source",
    ),
    # Notifications.
    "a receiver of an unknown kind": BadRollout(
        put("spec.notifications", {"receivers": [{**RECEIVER, "kind": "discord"}]}),
        "spec.notifications.receivers[0].kind",
    ),
    "two receivers of one name": BadRollout(
        put("spec.notifications", {"receivers": [RECEIVER, RECEIVER]}), "spec.notifications.receivers[1]"
    ),
    "a receiver without its Secret": BadRollout(
        put("spec.notifications", {"receivers": [{"name": "ops", "kind": "slack"}]}),
        "spec.notifications.receivers[0].urlSecretRef",
    ),
    "a transition twice": BadRollout(
        put("spec.notifications", {"receivers": [RECEIVER], "on": ["Paused", "Paused"]}),
        "spec.notifications.on[1]",
    ),
    "an unknown transition": BadRollout(
        put("spec.notifications", {"receivers": [RECEIVER], "on": ["Exploded"]}), "spec.notifications.on[0]"
    ),
}

# Fields no schema declares (the CRD keeps no unknown fields): refused under strict field validation
# (kubectl's default), pruned otherwise; the models refuse them either way.
UNKNOWN_FIELDS: dict[str, BadRollout] = {
    "misspelt field": BadRollout(
        put("spec.rollback.maxConsecutiveError", 2), "spec.rollback.maxConsecutiveError"
    ),
    "unknown router": BadRollout(put("spec.trafficRouting.linkerd", {}), "spec.trafficRouting.linkerd"),
    "unknown step field": BadRollout(put(f"{STEP0}.analysis", {}), "spec.steps[0].analysis"),
    "unknown metric field": BadRollout(put(f"{METRIC0}.maximum", 1), "spec.analysis.metrics[0].maximum"),
}
