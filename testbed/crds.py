"""The CRDs every cluster the suite runs on needs: Gateway API (standard channel), the Gateway API
Inference Extension's (InferencePool), Istio's networking API, modelgate's own and kopf's peering
CRDs (the chart's copy), from the pinned Go modules and this repository."""

from __future__ import annotations

from collections.abc import Callable

from testbed.gomodules import module_dir
from testbed.versions import REPO_ROOT, pinned_versions

Kubectl = Callable[..., str]


def install_crds(kubectl: Kubectl) -> None:
    """Server-side apply: some of these CRDs are too large for client-side apply's annotation."""
    versions = pinned_versions()
    gateway_api = module_dir("sigs.k8s.io/gateway-api", versions["GATEWAY_API_VERSION"])
    inference = module_dir(
        "sigs.k8s.io/gateway-api-inference-extension", versions["INFERENCE_EXTENSION_VERSION"]
    )
    istio = module_dir("istio.io/api", versions["ISTIO_API_VERSION"])
    sources = [
        gateway_api / "config" / "crd" / "standard",
        inference / "config" / "crd" / "bases",
        istio / "kubernetes" / "customresourcedefinitions.gen.yaml",
        REPO_ROOT / "crds",
        REPO_ROOT / "charts" / "modelgate" / "crds" / "kopfpeerings.kopf.dev.yaml",
    ]
    files = [argument for source in sources for argument in ("-f", str(source))]
    kubectl("apply", "--server-side", "--force-conflicts", *files)
    kubectl("wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
