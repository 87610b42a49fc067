"""The CRDs every cluster the suite runs on needs: Gateway API (standard channel), the Gateway API
Inference Extension's (InferencePool; its removed InferenceModelRewrite from v1.5.0), llm-d's
InferenceModelRewrite, Istio's VirtualService, modelgate's own and kopf's peering CRDs (the chart's
copy), from the pinned Go modules and this repository."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path

import yaml

from testbed.gomodules import module_dir
from testbed.versions import REPO_ROOT, pinned_versions
from testbed.waiting import wait_for

Kubectl = Callable[..., str]
# Of Istio's fifteen CRDs (1 MB of schemas the API server compiles at every bed's start, 40% of
# the bed's start-up on 2 cores), the one a router writes; RBAC questions about the others
# (SubjectAccessReviews) need no CRD.
ISTIO_CRDS = ("virtualservices.networking.istio.io",)
# v1.6.0 moved InferenceModelRewrite out of the module; v1.5.0 is the last release that ships it.
MODEL_REWRITE_CRD = "inference.networking.x-k8s.io_inferencemodelrewrites.yaml"
# llm-d's, as released (hack/versions.env says why it is kept here and not fetched as a module).
LLMD_MODEL_REWRITE_CRD = REPO_ROOT / "testbed" / "upstream_crds" / "llm-d.ai_inferencemodelrewrites.yaml"


def install_crds(kubectl: Kubectl, *, also: str = "") -> None:
    """Server-side apply: some of these CRDs are too large for client-side apply's annotation.
    `also`: more YAML documents to apply in the same kubectl run (a bed's fake nodes)."""
    versions = pinned_versions()
    gateway_api = module_dir("sigs.k8s.io/gateway-api", versions["GATEWAY_API_VERSION"])
    inference = module_dir(
        "sigs.k8s.io/gateway-api-inference-extension", versions["INFERENCE_EXTENSION_VERSION"]
    )
    model_rewrite = module_dir(
        "sigs.k8s.io/gateway-api-inference-extension", versions["INFERENCE_MODEL_REWRITE_VERSION"]
    )
    istio = module_dir("istio.io/api", versions["ISTIO_API_VERSION"])
    sources = [
        gateway_api / "config" / "crd" / "standard",
        inference / "config" / "crd" / "bases",
        model_rewrite / "config" / "crd" / "bases" / MODEL_REWRITE_CRD,
        checked(LLMD_MODEL_REWRITE_CRD, versions["LLMD_MODEL_REWRITE_CRD_SHA256"]),
        REPO_ROOT / "crds",
        REPO_ROOT / "charts" / "modelgate" / "crds" / "kopfpeerings.kopf.dev.yaml",
    ]
    files = [argument for source in sources for argument in ("-f", str(source))]
    istio_crds = named_documents(istio / "kubernetes" / "customresourcedefinitions.gen.yaml", ISTIO_CRDS)
    documents = "\n---\n".join(filter(None, (istio_crds, also)))
    kubectl("apply", "--server-side", "--force-conflicts", *files, "-f", "-", stdin=documents)

    wait_for(lambda: all_established(kubectl), timeout=60, what="every CRD Established")


def checked(manifest: Path, sha256: str) -> Path:
    """`manifest`, once its bytes are shown to be the pinned release's."""
    found = hashlib.sha256(manifest.read_bytes()).hexdigest()
    if found != sha256:
        raise ValueError(f"{manifest} has sha256 {found}, not the pinned {sha256} (hack/versions.env)")
    return manifest


def all_established(kubectl: Kubectl) -> bool:
    """One list of the CRDs: `kubectl wait crd --all` asks for each in turn (2 s of a bed's start for
    seventeen). As JSON: a CRD just created has no conditions yet, which a jsonpath filter refuses."""
    crds = json.loads(kubectl("get", "crd", "-o", "json"))["items"]
    return all(
        any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)
        for conditions in ((crd.get("status") or {}).get("conditions") or [] for crd in crds)
    )


def named_documents(path: Path, names: tuple[str, ...]) -> str:
    """The documents of a multi-document YAML file whose metadata.name is one of `names`, as
    written (libyaml reads them: Python's own parser takes seconds over Istio's 1 MB)."""
    kept = {}
    for text in re.split(r"^---$", path.read_text(), flags=re.MULTILINE):
        document = yaml.load(text, Loader=yaml.CSafeLoader)
        if document and document["metadata"]["name"] in names:
            kept[document["metadata"]["name"]] = text
    missing = set(names) - set(kept)
    if missing:
        raise ValueError(f"{path} has no {sorted(missing)}")
    return "---".join(kept.values())
