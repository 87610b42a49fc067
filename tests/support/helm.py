"""helm for tests: the pinned binary, and the chart installed for the length of a test."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed.binaries import binary
from testbed.versions import REPO_ROOT

CHART = REPO_ROOT / "charts" / "modelgate"
BED_REPOSITORY = "modelgate"


def helm(kubeconfig: Path, *args: str) -> str:
    """The pinned helm against `kubeconfig`; a failure raises with helm's own message."""
    result = subprocess.run(
        [str(binary("helm")), f"--kubeconfig={kubeconfig}", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    if result.returncode != 0:
        raise RuntimeError(f"helm {' '.join(args)} failed: {result.stderr.strip()}")
    return result.stdout


@dataclass(frozen=True)
class HelmRelease:
    name: str
    namespace: str

    @property
    def fullname(self) -> str:
        """The name of the release's objects (the release name does not contain "modelgate")."""
        return f"{self.name}-modelgate"


@contextmanager
def installed_chart(
    kubeconfig: Path, namespace: str, values: Mapping[str, Any] | None = None
) -> Iterator[HelmRelease]:
    """Installs the chart as release `<namespace>` (CRDs come from the bed) and uninstalls it at
    the end, which also removes its cluster-scoped objects and the Roles in other namespaces."""
    release = HelmRelease(name=namespace, namespace=namespace)
    settings = [f"--set-json={key}={json.dumps(value)}" for key, value in (values or {}).items()]
    # The pods do not really run (kwok), so any repository will do; later --set-json wins.
    # The chart's ClusterModelRolloutPolicy is cluster-wide and kept on uninstall: only the test of
    # it asks for it (a --set-json, which the test's own --set-json overrides; a --set would win).
    bed_values = [
        "--set=image.repository=" + BED_REPOSITORY,
        "--set=crds.install=false",
        "--set-json=rolloutPolicies.defaultPolicy.create=false",
    ]
    helm(
        kubeconfig,
        "install",
        release.name,
        str(CHART),
        "-n",
        namespace,
        "--skip-crds",
        *bed_values,
        *settings,
    )
    try:
        yield release
    finally:
        helm(kubeconfig, "uninstall", release.name, "-n", namespace)
