"""docs/refusal-sidecar.md's example runs: the sidecar's arguments are ones `modelgate refusal-proxy`
accepts, it listens where the Service and the scrape configurations look, and it proxies the port the
server listens on."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from modelgate.cli.main import build_parser

PAGE = Path(__file__).resolve().parents[2] / "docs" / "refusal-sidecar.md"


def yaml_blocks() -> list[Any]:
    blocks = re.findall(r"^```yaml\n(.*?)^```", PAGE.read_text(), flags=re.MULTILINE | re.DOTALL)
    return [document for block in blocks for document in yaml.safe_load_all(block)]


def test_the_example_deployment_service_and_scrapes_fit_together() -> None:
    documents = yaml_blocks()
    (deployment,) = [d for d in documents if isinstance(d, dict) and d.get("kind") == "Deployment"]
    (service,) = [d for d in documents if isinstance(d, dict) and d.get("kind") == "Service"]
    server, sidecar = deployment["spec"]["template"]["spec"]["containers"]
    args = build_parser().parse_args([*sidecar["command"][1:], *sidecar["args"]])
    ports = {p["name"]: p["containerPort"] for p in sidecar["ports"]}
    assert args.command == "refusal-proxy" and args.host == "0.0.0.0"
    assert ports == {"proxy": args.port, "refusal-metrics": args.metrics_port}
    assert args.upstream == f"http://127.0.0.1:{server['ports'][0]['containerPort']}"
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["proxy"]
    monitor = next(d for d in documents if isinstance(d, dict) and d.get("kind") == "PodMonitor")
    assert {"port": "refusal-metrics", "path": "/metrics"} in monitor["spec"]["podMetricsEndpoints"]
    (job,) = next(d for d in documents if isinstance(d, list))
    assert {
        "source_labels": ["__meta_kubernetes_pod_container_port_name"],
        "regex": "refusal-metrics",
        "action": "keep",
    } in job["relabel_configs"]
    labels = {rule.get("target_label") for rule in job["relabel_configs"]}
    assert {"namespace", "pod"} <= labels  # what the presets select on
