"""The bed's Prometheus: a 1 s scrape interval and file-based service discovery, so tests add and
remove scrape targets while it runs, and the chart's alert rules evaluated every second. Debian's
build has no Kubernetes discovery; each target carries the labels that discovery would give a Pod
(`namespace`, `pod`, `container`)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

SCRAPE_INTERVAL = "1s"
# The chart's alert rules as shipped (the PrometheusRule holds the same groups): tests see them fire.
ALERT_RULES = Path(__file__).resolve().parents[1] / "charts" / "modelgate" / "alerts" / "modelgate-rules.yaml"
_TARGET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{0,200}$")


def write_config(directory: Path) -> Path:
    targets = directory / "targets"
    targets.mkdir(parents=True, exist_ok=True)
    config = {
        "global": {
            "scrape_interval": SCRAPE_INTERVAL,
            "scrape_timeout": SCRAPE_INTERVAL,
            "evaluation_interval": SCRAPE_INTERVAL,
        },
        "rule_files": [str(ALERT_RULES)],
        "scrape_configs": [
            {
                "job_name": "bed",
                "honor_labels": True,
                "file_sd_configs": [{"files": [str(targets / "*.json")], "refresh_interval": "1s"}],
            }
        ],
    }
    path = directory / "prometheus.yml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


class ScrapeTargets:
    """One JSON file per target; Prometheus picks up a change within about a second."""

    def __init__(self, prometheus_dir: Path) -> None:
        self.directory = prometheus_dir / "targets"

    def add(self, name: str, address: str, labels: dict[str, str]) -> None:
        if not _TARGET_NAME.match(name):
            raise ValueError(f"target name {name!r}: expected lower-case letters, digits, '.' and '-'")
        entry: list[dict[str, Any]] = [{"targets": [address], "labels": labels}]
        tmp = self.directory / f".{name}.tmp"
        tmp.write_text(json.dumps(entry))
        # Atomic rename: discovery never reads a half-written file.
        tmp.replace(self.directory / f"{name}.json")

    def remove(self, name: str) -> None:
        (self.directory / f"{name}.json").unlink(missing_ok=True)

    def names(self) -> list[str]:
        return sorted(path.stem for path in self.directory.glob("*.json"))
