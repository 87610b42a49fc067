"""The runnable manifests of docs/topologies/ (examples/topologies/*.yaml) as the bed applies them.

A topology page's manifest is the one its cluster test applies: loaded from the file, and changed
only where the bed must differ from a cluster (`on_the_bed`): the namespace, the Prometheus address,
and time. The bed's traffic is tens of requests a second for seconds, so every pause is cut to
`pause`, the analysis interval to `interval` and minRequests to `min_requests`; steps, metrics,
thresholds, names and routes stay as the page shows them."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from testbed.manifests import Manifest
from testbed.versions import REPO_ROOT

TOPOLOGY_MANIFESTS = REPO_ROOT / "examples" / "topologies"
TOPOLOGY_PAGES = REPO_ROOT / "docs" / "topologies"


def topology_manifest(name: str) -> Path:
    return TOPOLOGY_MANIFESTS / f"{name}.yaml"


def topology_documents(name: str) -> list[Manifest]:
    """The documents of examples/topologies/`name`.yaml, in order."""
    return [doc for doc in yaml.safe_load_all(topology_manifest(name).read_text()) if doc]


def model_rollout_of(documents: list[Manifest]) -> Manifest:
    """The one ModelRollout among `documents`."""
    (rollout,) = [doc for doc in documents if doc.get("kind") == "ModelRollout"]
    return rollout


def on_the_bed(
    name: str,
    namespace: str,
    prometheus: str,
    *,
    pause: str = "3s",
    interval: str = "1s",
    min_requests: int = 10,
) -> list[Manifest]:
    """Topology `name`'s documents placed in `namespace`, its ModelRollout reading the bed's
    `prometheus` on the bed's time (the module's docstring); nothing else changed."""
    documents = copy.deepcopy(topology_documents(name))
    for document in documents:
        document.setdefault("metadata", {})["namespace"] = namespace
    spec = model_rollout_of(documents)["spec"]
    for step in spec.get("steps") or []:
        if "pause" in step:
            step["pause"] = {"duration": pause}
    analysis = spec.get("analysis")
    if analysis is not None:
        analysis["prometheus"]["address"] = prometheus
        analysis["interval"] = interval
        analysis["minRequests"] = min_requests
    return documents


def candidate_weights(rollout: Manifest) -> list[int]:
    """The weights a promoted rollout's route shows in turn: 0, each step's, then 100."""
    steps = rollout["spec"]["steps"]
    return [0, *(step["setWeight"] for step in steps if "setWeight" in step), 100]
