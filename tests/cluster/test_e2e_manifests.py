"""What e2e/kind.sh applies, checked by a real API server with `kubectl apply --dry-run=server`:
schema validation, CEL rules (ModelRollout, Gateway API) and admission, without Docker or kind.

The manifests use only kinds the bed serves (core, apps, batch, RBAC and the Gateway API standard
channel), so no object is skipped: Istio's own Deployment and Service for the Gateway are created
by istiod on kind, not applied by the script."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.binaries import binary
from testbed.localcluster import kubectl
from testbed.versions import REPO_ROOT
from tests.support.clusters import TestCluster

KIND_SCRIPT = REPO_ROOT / "e2e" / "kind.sh"
CHART = REPO_ROOT / "charts" / "modelgate"
EXAMPLE_PROMETHEUS = "http://prometheus.monitoring:9090"


def applied_manifests() -> list[Path]:
    """The e2e/manifests files e2e/kind.sh applies, in the order it applies them."""
    names = re.findall(r"apply -f \"\$manifests/([\w.-]+\.yaml)\"", KIND_SCRIPT.read_text())
    assert names, "e2e/kind.sh applies no manifest"
    return [REPO_ROOT / "e2e" / "manifests" / name for name in names]


def documents(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def dry_run(kubeconfig: Path, namespace: str, manifest: str) -> list[str]:
    """`kubectl apply --dry-run=server -n NAMESPACE`, as e2e/kind.sh applies (client-side apply)."""
    out = kubectl(kubeconfig, "apply", "--dry-run=server", "-n", namespace, "-f", "-", stdin=manifest)
    return out.splitlines()


@pytest.mark.parametrize("path", applied_manifests(), ids=lambda p: p.name)
def test_e2e_manifest_is_accepted_by_the_api_server(cluster: TestCluster, namespace: str, path: Path) -> None:
    text = path.read_text()
    lines = dry_run(cluster.kubeconfig, namespace, text)
    assert len(lines) == len(documents(text))
    assert all(line.endswith("(server dry run)") for line in lines), lines


@pytest.mark.parametrize("example", ["rollout-good.yaml", "rollout-bad.yaml"])
def test_example_rollout_as_kind_sh_rewrites_it_is_accepted(
    cluster: TestCluster, namespace: str, example: str
) -> None:
    # e2e/kind.sh: sed "s#$example_prometheus#$e2e_prometheus#" examples/...
    text = (REPO_ROOT / "examples" / example).read_text()
    assert EXAMPLE_PROMETHEUS in text
    rewritten = text.replace(EXAMPLE_PROMETHEUS, f"http://prometheus.{namespace}.svc:9090")
    (line,) = dry_run(cluster.kubeconfig, namespace, rewritten)
    assert line == "modelrollout.modelgate.io/chat created (server dry run)"


def test_prometheus_service_account_may_discover_pods_in_its_namespace_only(
    cluster: TestCluster, namespace: str
) -> None:
    # The RoleBinding's subject names no namespace: RBAC then takes the binding's own. Applied for
    # real (only the RBAC objects) to see the authorizer agree.
    rbac = [
        doc
        for doc in documents((REPO_ROOT / "e2e" / "manifests" / "prometheus.yaml").read_text())
        if doc["kind"] in {"ServiceAccount", "Role", "RoleBinding"}
    ]
    assert len(rbac) == 3
    kubectl(cluster.kubeconfig, "apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump_all(rbac))
    user = f"system:serviceaccount:{namespace}:prometheus"

    def can_i(verb: str, where: str) -> str:
        result = subprocess.run(
            [
                str(binary("kubectl")),
                f"--kubeconfig={cluster.kubeconfig}",
                *("auth", "can-i", verb, "pods", "-n", where, f"--as={user}"),
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        return result.stdout.strip()

    assert [can_i(verb, namespace) for verb in ("list", "watch")] == ["yes", "yes"]
    assert can_i("list", "default") == "no"


def server_version(kubeconfig: Path) -> str:
    version = json.loads(kubectl(kubeconfig, "version", "-o", "json"))
    return str(version["serverVersion"]["gitVersion"])


def test_helm_chart_as_kind_sh_installs_it_is_accepted(cluster: TestCluster, namespace: str) -> None:
    if not (CHART / "Chart.yaml").exists():
        pytest.skip("charts/modelgate is not in the repository yet")
    args = re.search(
        r"\"\$helm\" install modelgate \"\$root/charts/modelgate\"(.*?)--wait", KIND_SCRIPT.read_text(), re.S
    )
    assert args, "e2e/kind.sh does not install charts/modelgate"
    sets = re.findall(r"--set (\S+)", args.group(1))
    assert sets == ["image.repository=modelgate", "image.tag=e2e", "image.pullPolicy=Never"]
    # CRDs (the chart's crds/) are left out: helm creates them itself, and the bed has them already.
    rendered = subprocess.run(
        [
            str(binary("helm")),
            *("template", "modelgate", str(CHART), "--namespace", namespace),
            *("--kube-version", server_version(cluster.kubeconfig)),
            *(arg for value in sets for arg in ("--set", value)),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert rendered.returncode == 0, rendered.stderr
    docs = documents(rendered.stdout)
    lines = dry_run(cluster.kubeconfig, namespace, rendered.stdout)
    assert len(lines) == len(docs)
    assert all(line.endswith("(server dry run)") for line in lines), lines
    # e2e/kind.sh runs `kubectl exec deploy/modelgate`, and the image is the one it loaded.
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    assert deployment["metadata"]["name"] == "modelgate"
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert (container["image"], container["imagePullPolicy"]) == ("modelgate:e2e", "Never")
    # The chart's user is the image's (Dockerfile: USER 65532:65532).
    assert container["securityContext"]["runAsUser"] == 65532
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
