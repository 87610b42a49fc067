"""LoRA adapter rollouts on the bed: the operator moves the target weights of an InferenceModelRewrite
rule between two adapters of one InferencePool, the endpoint picker stand-in rewrites each request's
model by those weights in front of llm-d's simulator serving both adapters, and the rollout is judged
on the picker's series by target model (source llm-d).

The simulator injects failures per server, whatever the adapter: to make the candidate adapter fail
alone, the stand-in forwards the candidate's requests to a second simulator that serves the same
adapters with failure injection, the rest to a healthy one. From the picker's series (all that judges
an adapter) that is the same as a broken adapter on shared servers.

Every test namespace serves adapters of the same names: the picker's series are scraped with the
`namespace` and `service` labels a ServiceMonitor adds, and the rollout reads only its own pool's
picker's, so one team's failing adapter does not change another team's verdict."""

from __future__ import annotations

import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from modelgate.api import Phase
from testbed.endpoint_picker import EndpointPickerStandIn
from testbed.inference_pools import inference_pool, model_rewrite
from testbed.inference_sim import SimulatorFlags, lora_args, start_simulator
from testbed.localcluster import LocalCluster, kubectl
from testbed.manifests import Manifest, model_deployment, model_rollout
from testbed.operator_process import OperatorProcess
from testbed.ports import LOOPBACK, free_port
from testbed.traffic_driver import BackgroundTraffic, gateway_driver
from testbed.versions import REPO_ROOT
from testbed.waiting import wait_for
from tests.support.clusters import TestCluster
from tests.support.kube import create, scratch_namespace
from tests.support.scenario import Rollouts

POOL = "base"
PICKER = "base-epp"  # the endpoint picker Service the pool names
INCUMBENT, CANDIDATE = "chat-lora-v1", "chat-lora-v2"  # in every namespace: each team's own
REWRITE = "chat-adapters"
BASE_MODEL = "base-model"
ASKED = "chat"  # the model clients ask for (the traffic driver's), which the rule rewrites
HOLD = "3s"  # each weight is held this long: the split (40 requests at 40 a second) is counted in it
FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)
ERRORS = {"name": "errors", "preset": "errorRate", "max": 0.05}
EXAMPLE = REPO_ROOT / "examples" / "rollout-adapters.yaml"


@dataclass
class AdapterServing:
    rollouts: Rollouts
    picker: EndpointPickerStandIn
    incumbent: str
    candidate: str

    def split_at(self, candidate_weight: int, requests: int = 40) -> float:
        """The candidate's share of `requests` the picker routed once it follows `candidate_weight`."""
        expected = {self.incumbent: 100 - candidate_weight, self.candidate: candidate_weight}
        wait_for(
            lambda: self.picker.weights() == {a: w for a, w in expected.items() if w},
            timeout=30,
            what=f"the picker to follow the rule at {candidate_weight}",
        )
        before = self.picker.routed()
        routed: Counter[str] = wait_for(
            lambda: (delta := self.picker.routed() - before).total() >= requests and delta,
            timeout=30,
            what=f"{requests} requests routed at {candidate_weight}",
        )
        return routed[self.candidate] / routed.total()


@contextmanager
def adapter_serving(
    bed: LocalCluster, api_client: client.ApiClient, namespace: str, *, failing_candidate: bool = False
) -> Iterator[AdapterServing]:
    """Pool `base` (one Ready Pod), the rewrite sending every request for `chat` to the incumbent
    adapter, two simulators serving both adapters (the second failing half its requests, and given
    the candidate's with `failing_candidate`), the picker in front of them scraped by the bed's
    Prometheus with the labels a ServiceMonitor of the pool's picker Service adds, and 40 requests a
    second to it."""
    incumbent, candidate = INCUMBENT, CANDIDATE
    create(api_client, model_deployment("chat-base", namespace, replicas=1))
    labels = {"app.kubernetes.io/name": "chat-base"}
    create(api_client, inference_pool(POOL, namespace, labels, endpoint_picker=PICKER))
    create(api_client, model_rewrite(REWRITE, namespace, POOL, ASKED, {incumbent: 100}))
    adapters = lora_args([incumbent, candidate])
    healthy = SimulatorFlags(served_model_name=BASE_MODEL).args(BASE_MODEL) + adapters
    failing = (
        SimulatorFlags(served_model_name=BASE_MODEL, failure_rate_percent=50).args(BASE_MODEL) + adapters
    )
    servers = {}
    for name, args in (("healthy", healthy), ("failing", failing)):
        port = free_port()
        servers[name] = (
            start_simulator(bed.processes, f"sim-{namespace}-{name}", LOOPBACK, port, args),
            port,
        )
    urls = {name: f"http://{LOOPBACK}:{port}" for name, (_, port) in servers.items()}
    picker = EndpointPickerStandIn(
        client.CustomObjectsApi(api_client),
        namespace,
        REWRITE,
        default=urls["healthy"],
        upstreams={candidate: urls["failing"]} if failing_candidate else {},
    ).start()
    target = f"epp-{namespace}"
    try:
        for url in urls.values():
            wait_for(lambda url=url: _answers(url), timeout=30, what=f"the simulator at {url}")
        scraped = {"job": PICKER, "namespace": namespace, "service": PICKER}
        bed.scrape_targets.add(target, picker.url.removeprefix("http://"), scraped)
        with BackgroundTraffic(gateway_driver(picker.url, rps=40)):
            yield AdapterServing(Rollouts(api_client, namespace), picker, incumbent, candidate)
    finally:
        bed.scrape_targets.remove(target)
        picker.stop()
        for process, _ in servers.values():
            bed.processes.stop(process)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def adapter_rollout(serving: AdapterServing, prometheus: str, weights: list[int]) -> Manifest:
    steps: list[dict[str, Any]] = []
    for weight in weights:
        steps += [{"setWeight": weight}, {"pause": {"duration": HOLD}}]
    manifest = model_rollout(
        "chat",
        serving.rollouts.namespace,
        steps=steps,
        prometheus=prometheus,
        metrics=[ERRORS],
        interval="1s",
        min_requests=10,
    )
    spec = manifest["spec"]
    spec["incumbent"] = {"inferencePool": POOL, "adapter": serving.incumbent}
    spec["candidate"] = {"inferencePool": POOL, "adapter": serving.candidate}
    spec["trafficRouting"] = {"inferenceModelRewrite": {"name": REWRITE}}
    spec["analysis"]["source"] = "llm-d"
    return manifest


def rewrite_targets(api_client: client.ApiClient, namespace: str) -> list[dict[str, Any]]:
    found: Any = client.CustomObjectsApi(api_client).get_namespaced_custom_object(
        "inference.networking.x-k8s.io", "v1alpha2", namespace, "inferencemodelrewrites", REWRITE
    )
    return list(found["spec"]["rules"][0]["targets"])


def test_an_adapter_rollout_is_promoted_through_10_50_100_with_the_pickers_split_following(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    with adapter_serving(local_bed, api_client, namespace) as serving:
        serving.rollouts.apply(adapter_rollout(serving, local_bed.prometheus_url, [10, 50, 100]))
        # Smooth weighted round robin: every 10 requests at 10/90 send exactly one to the candidate;
        # the bounds leave room for the requests in flight when the rule changes.
        for weight in (10, 50, 100):
            share = serving.split_at(weight)
            assert abs(share - weight / 100) <= 0.05, (weight, share)
        final = serving.rollouts.wait_for_status("the rollout to end", lambda s: s.phase in FINISHED, 60)
        assert final.phase is Phase.SUCCEEDED, final.message
        # At 100 the incumbent's target is gone (the API forbids weight 0); the other fields stay.
        assert rewrite_targets(api_client, namespace) == [{"modelRewrite": serving.candidate, "weight": 100}]
        assert {m.name: m.value for m in final.analysis}["errors"] == 0


def test_a_failing_adapter_is_rolled_back_and_its_target_removed(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    with adapter_serving(local_bed, api_client, namespace, failing_candidate=True) as serving:
        serving.rollouts.apply(adapter_rollout(serving, local_bed.prometheus_url, [20, 100]))
        assert abs(serving.split_at(20) - 0.2) <= 0.05
        final = serving.rollouts.wait_for_status("the rollout to end", lambda s: s.phase in FINISHED, 60)
        assert final.phase is Phase.ROLLED_BACK, final.message
        reason = final.rollback_reason
        assert reason is not None and reason.metric == "errors"
        assert reason.query is not None and f'target_model_name="{serving.candidate}"' in reason.query
        assert rewrite_targets(api_client, namespace) == [{"modelRewrite": serving.incumbent, "weight": 100}]
        assert serving.split_at(0) == 0


def test_two_teams_adapters_of_the_same_names_are_each_judged_on_their_own_requests(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    """Both teams roll chat-lora-v1 to chat-lora-v2 at once; the other team's candidate fails half its
    requests. Counted together, this team's candidate would fail a quarter of them (its 8 requests a
    second at 20% and the other's 8, 4 failing): far over the metric's 0.05."""
    with (
        scratch_namespace(api_client) as other_team,
        adapter_serving(local_bed, api_client, namespace) as healthy,
        adapter_serving(local_bed, api_client, other_team, failing_candidate=True) as failing,
    ):
        for serving in (healthy, failing):
            serving.rollouts.apply(adapter_rollout(serving, local_bed.prometheus_url, [20, 100]))
        rolled_back = failing.rollouts.wait_for_status("team b to end", lambda s: s.phase in FINISHED, 60)
        promoted = healthy.rollouts.wait_for_status("team a to end", lambda s: s.phase in FINISHED, 60)
        assert rolled_back.phase is Phase.ROLLED_BACK, rolled_back.message
        assert promoted.phase is Phase.SUCCEEDED, promoted.message
        assert {m.name: m.value for m in promoted.analysis}["errors"] == 0


def test_the_example_is_accepted_by_the_api_server(cluster: TestCluster, namespace: str) -> None:
    applied = kubectl(cluster.kubeconfig, "apply", "--dry-run=server", "-n", namespace, "-f", str(EXAMPLE))
    assert applied.splitlines() == [
        "inferencepool.inference.networking.k8s.io/base created (server dry run)",
        "inferencemodelrewrite.inference.networking.x-k8s.io/chat-adapters created (server dry run)",
        "modelrollout.modelgate.io/chat-adapters created (server dry run)",
    ]
