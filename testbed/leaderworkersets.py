"""LeaderWorkerSet on the bed: its CRD from the pinned module, its own controller as a local process.

The CRD is sigs.k8s.io/lws's config/crd/bases at LWS_VERSION (hack/versions.env), fetched through
the Go module proxy; the controller is the module's own `cmd`, built by hack/build-bins.sh (`lws`)
and run against the bed's API server with the admin kubeconfig. Its webhooks are not optional: the
Pod webhook labels each group's Pods (group index, worker index) that the controller then reads. They
are served on 127.0.0.1 with a certificate of a CA made for them, and registered by URL; the Pod
webhooks select only Pods of a LeaderWorkerSet, so the bed's other Pods never wait on them.
Installed on demand (by the tests that need it): its CRD is 16,000 lines that every bed's start
would otherwise compile."""

from __future__ import annotations

import base64
import copy
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from testbed.binaries import binary
from testbed.crds import all_established
from testbed.gomodules import module_dir
from testbed.localcluster import LocalCluster
from testbed.loopback_pods import on_loopback_node
from testbed.pki import LocalPKI
from testbed.ports import free_port
from testbed.versions import pinned_versions
from testbed.waiting import wait_for

LWS_MODULE = "sigs.k8s.io/lws"
NAME_LABEL = "leaderworkerset.sigs.k8s.io/name"
WORKER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
WEBHOOKS = "modelgate-bed-lws"
_LWS_RULE = {
    "apiGroups": ["leaderworkerset.x-k8s.io"],
    "apiVersions": ["v1"],
    "operations": ["CREATE", "UPDATE"],
    "resources": ["leaderworkersets"],
}
_POD_RULE = {"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}
_LWS_PODS = {"matchExpressions": [{"key": NAME_LABEL, "operator": "Exists"}]}


def lws_crd() -> Path:
    """The LeaderWorkerSet CRD of the pinned release."""
    directory = module_dir(LWS_MODULE, pinned_versions()["LWS_VERSION"])
    return directory / "config" / "crd" / "bases" / "leaderworkerset.x-k8s.io_leaderworkersets.yaml"


def controller_config(webhook_port: int, probe_port: int, cert_dir: Path) -> dict[str, Any]:
    """The controller's configuration (config.lws.x-k8s.io/v1alpha1): one replica, no leader
    election, no certificate management of its own, every listener on 127.0.0.1."""
    return {
        "apiVersion": "config.lws.x-k8s.io/v1alpha1",
        "kind": "Configuration",
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"port": webhook_port, "host": "127.0.0.1", "certDir": str(cert_dir)},
        "metrics": {"bindAddress": "0"},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{probe_port}"},
    }


def _webhook(name: str, url: str, ca: str, rule: dict[str, Any], pods: bool) -> dict[str, Any]:
    hook: dict[str, Any] = {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"url": url, "caBundle": ca},
        "failurePolicy": "Fail",
        "sideEffects": "None",
        "rules": [rule],
    }
    if pods:
        hook["objectSelector"] = _LWS_PODS
    return hook


def webhook_configurations(base: str, ca_bundle: str) -> list[dict[str, Any]]:
    """LWS's config/webhook/manifests.yaml, by URL on 127.0.0.1, its Pod webhooks narrowed to the
    Pods of LeaderWorkerSets."""
    admission = "admissionregistration.k8s.io/v1"
    pod_create = {**_POD_RULE, "operations": ["CREATE"]}
    pod_write = {**_POD_RULE, "operations": ["CREATE", "UPDATE"]}
    mutating = [
        _webhook(
            "mleaderworkerset.kb.io",
            f"{base}/mutate-leaderworkerset-x-k8s-io-v1-leaderworkerset",
            ca_bundle,
            _LWS_RULE,
            False,
        ),
        _webhook("mpod.kb.io", f"{base}/mutate--v1-pod", ca_bundle, pod_create, True),
    ]
    validating = [
        _webhook(
            "vleaderworkerset.kb.io",
            f"{base}/validate-leaderworkerset-x-k8s-io-v1-leaderworkerset",
            ca_bundle,
            _LWS_RULE,
            False,
        ),
        _webhook("vpod.kb.io", f"{base}/validate--v1-pod", ca_bundle, pod_write, True),
    ]
    return [
        {
            "apiVersion": admission,
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": WEBHOOKS},
            "webhooks": mutating,
        },
        {
            "apiVersion": admission,
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": WEBHOOKS},
            "webhooks": validating,
        },
    ]


@contextmanager
def leaderworkersets(bed: LocalCluster, state_dir: Path) -> Iterator[None]:
    """The CRD installed and the controller running (with its webhooks registered) while inside;
    the webhooks removed and the controller stopped after."""
    bed.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(lws_crd()))
    wait_for(lambda: all_established(bed.kubectl), timeout=60, what="the LeaderWorkerSet CRD Established")
    pki = LocalPKI(state_dir / "lws-pki")
    pki.issue("tls", common_name="lws-webhook", server_hosts=("127.0.0.1",))
    webhook_port, probe_port = free_port(), free_port()
    config = state_dir / "lws-config.yaml"
    config.write_text(json.dumps(controller_config(webhook_port, probe_port, pki.directory)))
    process = bed.processes.start(
        "lws-controller",
        [str(binary("lws-controller")), f"--config={config}", "--zap-log-level=info"],
        env={"KUBECONFIG": str(bed.kubeconfig)},
    )
    try:
        wait_for(
            lambda: _healthy(f"http://127.0.0.1:{probe_port}/readyz"),
            timeout=60,
            what="the LeaderWorkerSet controller ready",
        )
        ca_bundle = base64.b64encode(pki.ca.cert.read_bytes()).decode()
        documents = webhook_configurations(f"https://127.0.0.1:{webhook_port}", ca_bundle)
        bed.kubectl(
            "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": documents})
        )
        yield
    finally:
        bed.kubectl(
            "delete",
            "mutatingwebhookconfiguration,validatingwebhookconfiguration",
            WEBHOOKS,
            "--ignore-not-found",
        )
        bed.processes.stop(process)


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def on_the_bed(documents: list[dict[str, Any]], namespace: str, prometheus: str) -> list[dict[str, Any]]:
    """A topology's manifest (examples/topologies/leaderworkerset.yaml) as the bed runs it, changed
    only where the bed must: every object in `namespace`, the rollout's Prometheus the bed's, and
    each LeaderWorkerSet's Pods on the loopback node (their IPs are where their simulators listen,
    and where the gateway reaches them)."""
    placed = []
    for document in copy.deepcopy(documents):
        document["metadata"]["namespace"] = namespace
        if document["kind"] == "ModelRollout":
            document["spec"]["analysis"]["prometheus"]["address"] = prometheus
        if document["kind"] == "LeaderWorkerSet":
            template = document["spec"]["leaderWorkerTemplate"]
            for key in ("leaderTemplate", "workerTemplate"):
                template[key] = on_loopback_node({"spec": {"template": template[key]}})["spec"]["template"]
        placed.append(document)
    return placed
