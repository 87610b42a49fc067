"""What a test knows of the cluster it runs against."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from testbed.localcluster import LocalCluster


@dataclass(frozen=True)
class TestCluster:
    __test__ = False  # not a test class, despite the name

    kubeconfig: Path
    local: LocalCluster | None
