"""LoRA adapter rollouts on the bed: the operator moves the target weights of a rule of llm-d's
InferenceModelRewrite (llm-d.ai/v1alpha2) between two adapters of one InferencePool, the endpoint
picker stand-in rewrites each request's model by those weights in front of llm-d's simulator serving
both adapters, and the rollout is judged on the picker's series by target model (source llm-d). The
objects are docs/topologies/adapters.md's manifest, applied as the page shows them (testbed/
topologies.py: on the bed's Prometheus and time); a rewrite of the Inference Extension's removed
group is refused naming its replacement.

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

from modelgate.api import Phase, RouteState
from modelgate.routers.model_rewrite import REWRITE_GROUP, REWRITE_VERSION
from testbed.endpoint_picker import EndpointPickerStandIn
from testbed.inference_pools import REMOVED_REWRITE_API_VERSION, model_rewrite
from testbed.inference_sim import SimulatorFlags, lora_args, start_simulator
from testbed.localcluster import LocalCluster, kubectl
from testbed.manifests import Manifest
from testbed.operator_process import OperatorProcess
from testbed.ports import LOOPBACK, free_port
from testbed.topologies import model_rollout_of, on_the_bed
from testbed.traffic_driver import SERVED_MODEL, BackgroundTraffic, gateway_driver
from testbed.versions import REPO_ROOT
from testbed.waiting import wait_for
from tests.support.clusters import TestCluster
from tests.support.kube import create, scratch_namespace
from tests.support.scenario import Rollouts

PAGE = "adapters"  # docs/topologies/adapters.md, examples/topologies/adapters.yaml
BASE_MODEL = "base-model"
HOLD = "3s"  # each weight is held this long: the split (40 requests at 40 a second) is counted in it
FINISHED = (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED)
EXAMPLE = REPO_ROOT / "examples" / "rollout-adapters.yaml"


@dataclass(frozen=True)
class AdapterPage:
    """The page's objects in one namespace, and the names the test needs from them."""

    objects: list[Manifest]  # all but the ModelRollout, which each test applies
    rollout: Manifest
    picker: str  # the endpoint picker Service the pool names
    asked: str  # the model clients ask for, which the rule rewrites
    rewrite: str

    @property
    def incumbent(self) -> str:
        return str(self.rollout["spec"]["incumbent"]["adapter"])

    @property
    def candidate(self) -> str:
        return str(self.rollout["spec"]["candidate"]["adapter"])

    @property
    def weights(self) -> list[int]:
        return [step["setWeight"] for step in self.rollout["spec"]["steps"] if "setWeight" in step]


def adapter_page(namespace: str, prometheus: str) -> AdapterPage:
    documents = on_the_bed(PAGE, namespace, prometheus, pause=HOLD)
    rollout = model_rollout_of(documents)
    by_kind = {doc["kind"]: doc for doc in documents}
    rule = by_kind["InferenceModelRewrite"]["spec"]["rules"][0]
    return AdapterPage(
        objects=[doc for doc in documents if doc is not rollout],
        rollout=rollout,
        picker=by_kind["InferencePool"]["spec"]["endpointPickerRef"]["name"],
        asked=rule["matches"][0]["model"]["value"],
        rewrite=rollout["spec"]["trafficRouting"]["inferenceModelRewrite"]["name"],
    )


@dataclass
class AdapterServing:
    rollouts: Rollouts
    picker: EndpointPickerStandIn
    page: AdapterPage

    @property
    def incumbent(self) -> str:
        return self.page.incumbent

    @property
    def candidate(self) -> str:
        return self.page.candidate

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
    """The page's Deployment, pool and rewrite (every request for `chat` to the incumbent adapter),
    two simulators serving both adapters (the second failing half its requests, and given the
    candidate's with `failing_candidate`), the picker in front of them scraped by the bed's
    Prometheus with the labels a ServiceMonitor of the pool's picker Service adds, and 40 requests a
    second to it."""
    page = adapter_page(namespace, bed.prometheus_url)
    assert page.asked == SERVED_MODEL, "the rule must match the model the traffic driver asks for"
    for document in page.objects:
        create(api_client, document)
    incumbent, candidate = page.incumbent, page.candidate
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
        page.rewrite,
        default=urls["healthy"],
        upstreams={candidate: urls["failing"]} if failing_candidate else {},
    ).start()
    target = f"epp-{namespace}"
    try:
        for url in urls.values():
            wait_for(lambda url=url: _answers(url), timeout=30, what=f"the simulator at {url}")
        scraped = {"job": page.picker, "namespace": namespace, "service": page.picker}
        bed.scrape_targets.add(target, picker.url.removeprefix("http://"), scraped)
        with BackgroundTraffic(gateway_driver(picker.url, rps=40)):
            yield AdapterServing(Rollouts(api_client, namespace), picker, page)
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


def rewrite_targets(api_client: client.ApiClient, namespace: str, name: str) -> list[dict[str, Any]]:
    found: Any = client.CustomObjectsApi(api_client).get_namespaced_custom_object(
        REWRITE_GROUP, REWRITE_VERSION, namespace, "inferencemodelrewrites", name
    )
    return list(found["spec"]["rules"][0]["targets"])


def test_a_failing_adapter_is_rolled_back_and_its_target_removed(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    with adapter_serving(local_bed, api_client, namespace, failing_candidate=True) as serving:
        page = serving.page
        serving.rollouts.apply(page.rollout)
        first = page.weights[0]
        assert abs(serving.split_at(first) - first / 100) <= 0.05
        final = serving.rollouts.wait_for_status(
            "the rollout to end", lambda s: s.phase in FINISHED, 60, name=page.rollout["metadata"]["name"]
        )
        assert final.phase is Phase.ROLLED_BACK, final.message
        reason = final.rollback_reason
        assert reason is not None and reason.metric == "errors"
        assert reason.query is not None and f'target_model_name="{serving.candidate}"' in reason.query
        assert rewrite_targets(api_client, namespace, page.rewrite) == [
            {"modelRewrite": serving.incumbent, "weight": 100}
        ]
        assert serving.split_at(0) == 0


def test_two_teams_adapters_of_the_same_names_are_each_judged_on_their_own_requests(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    """Both teams roll chat-lora-v1 to chat-lora-v2 at once; the other team's candidate fails half its
    requests. Counted together, this team's candidate would fail a quarter of them (its 4 requests a
    second at 10% and the other's 4, 2 failing): far over the metric's 0.05."""
    with (
        scratch_namespace(api_client) as other_team,
        adapter_serving(local_bed, api_client, namespace) as healthy,
        adapter_serving(local_bed, api_client, other_team, failing_candidate=True) as failing,
    ):
        name = healthy.page.rollout["metadata"]["name"]
        for serving in (healthy, failing):
            serving.rollouts.apply(serving.page.rollout)
        rolled_back = failing.rollouts.wait_for_status(
            "team b to end", lambda s: s.phase in FINISHED, 60, name=name
        )
        promoted = healthy.rollouts.wait_for_status(
            "team a to end", lambda s: s.phase in FINISHED, 60, name=name
        )
        assert rolled_back.phase is Phase.ROLLED_BACK, rolled_back.message
        assert promoted.phase is Phase.SUCCEEDED, promoted.message
        assert {m.name: m.value for m in promoted.analysis}["errors"] == 0


def test_a_rewrite_of_the_removed_group_is_refused_naming_llm_ds(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str, operator: OperatorProcess
) -> None:
    """The page's objects with the rewrite created in the Inference Extension's removed group, as a
    cluster upgraded from an older modelgate has it: nothing is written, and the rollout says what
    replaced it."""
    page = adapter_page(namespace, local_bed.prometheus_url)
    for document in page.objects:
        if document["kind"] == "InferenceModelRewrite":
            spec = document["spec"]
            targets = {t["modelRewrite"]: t["weight"] for t in spec["rules"][0]["targets"]}
            document = model_rewrite(
                page.rewrite,
                namespace,
                spec["poolRef"]["name"],
                page.asked,
                targets,
                api_version=REMOVED_REWRITE_API_VERSION,
            )
        create(api_client, document)
    rollouts = Rollouts(api_client, namespace)
    rollouts.apply(page.rollout)
    name = page.rollout["metadata"]["name"]
    refused = rollouts.wait_for_status(
        "the route refused", lambda s: s.route_state is RouteState.ROUTE_NOT_FOUND, 60, name=name
    )
    (route_ready,) = [c for c in refused.conditions if c.type == "RouteReady"]
    assert f"{REWRITE_GROUP}/{REWRITE_VERSION}" in route_ready.message
    assert refused.current_weight == 0


def test_the_example_is_accepted_by_the_api_server(cluster: TestCluster, namespace: str) -> None:
    applied = kubectl(cluster.kubeconfig, "apply", "--dry-run=server", "-n", namespace, "-f", str(EXAMPLE))
    assert applied.splitlines() == [
        "inferencepool.inference.networking.k8s.io/base created (server dry run)",
        "inferencemodelrewrite.llm-d.ai/chat-adapters created (server dry run)",
        "modelrollout.modelgate.io/chat-adapters created (server dry run)",
    ]
