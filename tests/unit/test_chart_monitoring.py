"""The chart's Grafana dashboard and alert rules: valid for Prometheus (promtool), shipped unchanged
by the templates, and built only on metric names the operator really exports."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase

from modelgate import observability
from testbed.binaries import binary
from tests.support.promql import assert_evaluates
from tests.unit.test_chart import CHART, render, the

DASHBOARD = CHART / "dashboards" / "modelgate.json"
ALERTS = CHART / "alerts" / "modelgate-rules.yaml"
SUFFIXES = {"counter": ("_total",), "gauge": ("",), "histogram": ("_bucket", "_sum", "_count")}
# What Grafana substitutes before the query reaches Prometheus.
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__range": "6h", "$namespace": ".*", "$rollout": ".*"}
PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool"}
PROMQL_WORDS |= {"offset", "inf", "nan"}


def exported_metric_names() -> set[str]:
    """The series names the operator's metrics appear under in /metrics."""
    names = set()
    for metric in vars(observability).values():
        if isinstance(metric, MetricWrapperBase):
            (described,) = metric.describe()
            names |= {described.name + suffix for suffix in SUFFIXES[described.type]}
    return names


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects: identifiers that are neither functions,
    keywords, label names (in `{}` or after by/on/...) nor durations."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    text = re.sub(r"\{[^}]*\}|\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"(?<![\w.])([a-zA-Z_:][\w:]*)(\s*\()?", text):
        if match.group(2) is None and match.group(1).lower() not in PROMQL_WORDS:
            names.add(match.group(1))
    return names


def dashboard_queries() -> list[str]:
    """Every PromQL expression of the dashboard, Grafana's variables substituted; for a
    `label_values(selector, label)` variable, its selector."""
    dashboard = json.loads(DASHBOARD.read_text())
    queries = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]["query"]
            selector = re.fullmatch(r"label_values\((.*), *\w+\)", query)
            assert selector, f"variable {variable['name']}: unexpected query {query}"
            queries.append(selector.group(1))
    for name, value in GRAFANA_VARIABLES.items():
        queries = [q.replace(name, value) for q in queries]
    return queries


def alert_rules() -> list[dict[str, Any]]:
    groups = yaml.safe_load(ALERTS.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"]]


def promtool_check_rules(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary("promtool")), "check", "rules", str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def test_the_operator_exports_the_metrics_the_dashboard_and_alerts_are_built_on() -> None:
    assert exported_metric_names() >= {
        "modelgate_rollout_phase",
        "modelgate_rollout_candidate_weight",
        "modelgate_rollout_step",
        "modelgate_analysis_metric_value",
        "modelgate_analysis_verdicts_total",
        "modelgate_promotions_total",
        "modelgate_rollbacks_total",
        "modelgate_prometheus_query_errors_total",
        "modelgate_reconcile_duration_seconds_bucket",
    }


@pytest.mark.parametrize(
    ("expr", "names"),
    [
        ('sum by (le) (rate(a_bucket{x="y{z}"}[5m])) > 0.5', {"a_bucket"}),
        ("x and on (namespace, rollout) (max by (namespace) (changes(y[1h])) == 0)", {"x", "y"}),
        ("histogram_quantile(0.99, b) offset 5m", {"b"}),
    ],
)
def test_metric_names_are_parsed_out_of_promql(expr: str, names: set[str]) -> None:
    assert metric_names(expr) == names


def test_alert_rules_pass_promtool() -> None:
    result = promtool_check_rules(ALERTS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(alert_rules())} rules found" in result.stdout


def test_alert_rules_use_only_exported_metrics() -> None:
    exported = exported_metric_names()
    for rule in alert_rules():
        assert metric_names(rule["expr"]) <= exported, rule["alert"]
        assert rule["labels"]["severity"] and rule["annotations"]["summary"], rule["alert"]


def test_failed_notifications_fire_their_alert_by_namespace_and_receiver_kind(tmp_path: Path) -> None:
    (rule,) = [r for r in alert_rules() if r["alert"] == "ModelgateNotificationsFailing"]
    failed = 'modelgate_notifications_failed_total{{namespace="{}",receiver_kind="slack",transition="{}"}}'
    series = {
        failed.format("team-a", "RolledBack"): "0+1x20",  # one given up on each scrape
        failed.format("team-a", "Succeeded"): "0x20",
        failed.format("team-b", "RolledBack"): "3x20",  # failed before the window, none since
    }
    # 20 given up on in the 5 minutes of data, all inside the 15-minute window.
    firing = {'{namespace="team-a",receiver_kind="slack"}': 20.0}
    assert_evaluates(tmp_path, series, {rule["expr"]: firing})


def test_dashboard_queries_are_valid_promql(tmp_path: Path) -> None:
    # promtool parses every expression of a rules file: the dashboard's become recording rules.
    recorded = [{"record": f"dashboard:query{i}", "expr": q} for i, q in enumerate(dashboard_queries())]
    rules_file = tmp_path / "dashboard-rules.yaml"
    rules_file.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": recorded}]}))
    result = promtool_check_rules(rules_file)
    assert result.returncode == 0, result.stdout + result.stderr


def test_dashboard_queries_use_only_exported_metrics_and_show_each_of_them() -> None:
    exported = exported_metric_names()
    used = set()
    for query in dashboard_queries():
        names = metric_names(query)
        assert names, f"no metric in {query}"
        assert names <= exported, f"{query} uses {names - exported}, not exported by the operator"
        used |= names
    unused = {name for name in exported if not name.endswith(("_sum", "_count"))} - used
    assert not unused, f"the dashboard shows nothing of {unused}"


def test_dashboard_is_well_formed_grafana_json() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    assert dashboard["uid"] and dashboard["title"]
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dashboard["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]


def test_templates_ship_the_dashboard_and_rules_unchanged() -> None:
    objects = render({"grafanaDashboard": {"enabled": True}, "prometheusRule": {"enabled": True}})
    config_map = the(objects, "ConfigMap")
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config_map["data"]["modelgate.json"] == DASHBOARD.read_text().rstrip("\n")
    rule = the(objects, "PrometheusRule")
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["spec"] == yaml.safe_load(ALERTS.read_text())
