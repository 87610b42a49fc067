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


def test_every_flag_is_documented_and_the_limits_table_states_the_defaults() -> None:
    page = PAGE.read_text()
    defaults = vars(build_parser().parse_args(["refusal-proxy"]))
    flags = {f"--{dest.replace('_', '-')}": value for dest, value in defaults.items()}
    flags = {flag: value for flag, value in flags.items() if flag not in ("--command", "--handler")}
    assert [flag for flag in flags if not re.search(rf"(?<![\w-]){flag}(?![\w-])", page)] == []
    limits = page.split("## Limits under attack", 1)[1]
    stated = dict(re.findall(r"`(--[a-z-]+)` \(([^)]+)\)", limits))
    assert len(stated) >= 9
    assert {flag: documented_value(text) for flag, text in stated.items()} == {
        flag: flags[flag] for flag in stated
    }


def documented_value(text: str) -> float:
    number, _, unit = text.partition(" ")
    return float(number) * {"": 1, "s": 1, "MiB": 1024 * 1024}[unit]
