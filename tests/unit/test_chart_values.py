"""charts/modelgate's pod values (podLabels, extraArgs, security contexts, topology spread), its
PodMonitor, its CRD toggle, the Helm commands the docs give, and its generated values table."""

from __future__ import annotations

import itertools
import re
import shlex

import pytest
import yaml

from testbed.versions import REPO_ROOT
from tests.unit.test_chart import (
    CHART,
    NAMESPACE,
    Object,
    container,
    helm,
    of_kind,
    render,
    render_error,
    the,
)
from tooling.chart_values_doc import UndocumentedValuesError, value_rows, values_table

# Every page that gives a Helm command for the chart.
DOCUMENTED_COMMAND_PAGES = [
    REPO_ROOT / "docs" / "getting-started.md",
    REPO_ROOT / "docs" / "scaling.md",
    CHART / "README.md",
]
HELM_COMMAND = re.compile(r"^helm (?:install|upgrade|template)\b.*charts/modelgate\b")
# Options of `helm install/upgrade` that `helm template` and `helm lint` share.
VALUE_OPTIONS = ("--set", "--set-string", "--set-json", "--values", "-f")


def pod(objects: list[Object]) -> Object:
    spec: Object = the(objects, "Deployment")["spec"]["template"]
    return spec


def test_pod_labels_join_the_selector_labels_which_stay_as_they_were() -> None:
    default = the(render(), "Deployment")["spec"]["selector"]
    deployment = the(render({"podLabels": {"team": "ml"}}), "Deployment")
    assert deployment["spec"]["selector"] == default
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert labels["team"] == "ml"
    assert default["matchLabels"].items() <= labels.items()


def test_extra_args_come_after_the_charts_own() -> None:
    default = container(render())["args"]
    extra = ["--workers=8", "--some-flag"]
    assert container(render({"extraArgs": extra}))["args"] == default + extra


def test_security_contexts_default_to_the_images_user_and_can_be_removed() -> None:
    objects = render()
    assert pod(objects)["spec"]["securityContext"]["runAsUser"] == 65532
    assert container(objects)["securityContext"]["readOnlyRootFilesystem"] is True
    # Helm merges a user's map into the default one; null removes a key, or the whole context.
    emptied = render({"podSecurityContext": None, "securityContext": None})
    assert "securityContext" not in pod(emptied)["spec"]
    assert "securityContext" not in container(emptied)


def test_the_user_can_be_left_to_the_platform() -> None:
    # OpenShift's restricted SCC assigns the user itself and refuses a fixed runAsUser.
    openshift = {"runAsUser": None, "runAsGroup": None}
    objects = render({"podSecurityContext": openshift, "securityContext": {"runAsUser": None}})
    pod_context = pod(objects)["spec"]["securityContext"]
    container_context = container(objects)["securityContext"]
    assert not {"runAsUser", "runAsGroup"} & (pod_context.keys() | container_context.keys())
    assert pod_context["runAsNonRoot"] is container_context["runAsNonRoot"] is True
    assert container_context["capabilities"] == {"drop": ["ALL"]}


def test_topology_spread_constraints_are_passed_through() -> None:
    spread = [
        {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway"}
    ]
    assert pod(render({"topologySpreadConstraints": spread}))["spec"]["topologySpreadConstraints"] == spread
    assert "topologySpreadConstraints" not in pod(render())["spec"]


def test_pod_monitor_scrapes_the_containers_metrics_port() -> None:
    assert not of_kind(render(), "PodMonitor")
    objects = render({"podMonitor": {"enabled": True, "labels": {"release": "kube-prometheus"}}})
    monitor = the(objects, "PodMonitor")
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pod(objects)["metadata"]["labels"].items()
    (endpoint,) = monitor["spec"]["podMetricsEndpoints"]
    ports = {port["name"]: port["containerPort"] for port in container(objects)["ports"]}
    metrics_address = next(a for a in container(objects)["args"] if a.startswith("--metrics-address="))
    assert metrics_address.endswith(f":{ports[endpoint['port']]}")
    assert endpoint["honorLabels"] is True


@pytest.mark.parametrize("monitor", ["serviceMonitor", "podMonitor"])
def test_a_monitor_may_live_elsewhere_and_still_scrape_the_releases_namespace(monitor: str) -> None:
    kind = monitor[0].upper() + monitor[1:]
    default = the(render({monitor: {"enabled": True}}), kind)
    assert default["metadata"]["namespace"] == NAMESPACE
    moved = the(render({monitor: {"enabled": True, "namespace": "monitoring"}}), kind)
    assert moved["metadata"]["namespace"] == "monitoring"
    assert moved["spec"] == default["spec"]
    assert moved["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    error = render_error({monitor: {"enabled": True, "namespace": "Monitoring"}})
    assert f"at '/{monitor}/namespace'" in error


def test_service_monitor_and_pod_monitor_are_one_or_the_other() -> None:
    # Both would scrape every series twice, under two jobs.
    error = render_error({"serviceMonitor": {"enabled": True}, "podMonitor": {"enabled": True}})
    assert "serviceMonitor.enabled and podMonitor.enabled are both true" in error
    for monitor, kind in (("serviceMonitor", "ServiceMonitor"), ("podMonitor", "PodMonitor")):
        assert [o["kind"] for o in render({monitor: {"enabled": True}}) if o["kind"].endswith("Monitor")] == [
            kind
        ]


def crd_of(objects: list[Object]) -> list[Object]:
    return of_kind(objects, "CustomResourceDefinition")


def test_the_crds_are_installed_and_kept_by_default() -> None:
    crds = crd_of(render())
    files = (
        "modelrollouts.modelgate.io.yaml",
        "modelevaluations.modelgate.io.yaml",
        "modelrolloutpolicies.modelgate.io.yaml",
        "clustermodelrolloutpolicies.modelgate.io.yaml",
    )
    generated = [
        yaml.load((REPO_ROOT / "crds" / name).read_text(), Loader=yaml.CSafeLoader) for name in files
    ]
    for crd in crds:
        assert crd["metadata"].pop("annotations") == {"helm.sh/resource-policy": "keep"}
    assert crds == generated


def test_the_crds_toggle() -> None:
    assert not crd_of(render({"crds": {"install": False, "keep": True}}))
    crds = crd_of(render({"crds": {"install": True, "keep": False}}))
    assert len(crds) == 4 and all("annotations" not in crd["metadata"] for crd in crds)


def test_a_missing_image_repository_names_the_value() -> None:
    assert "image.repository is required" in render_error({"image": {"repository": ""}})


def documented_commands() -> list[tuple[str, list[str]]]:
    """(page, argv) of every Helm command for the chart in the docs' shell blocks, continuation
    lines joined and cut at a pipe."""
    commands = []
    for page in DOCUMENTED_COMMAND_PAGES:
        for block in re.findall(r"```sh\n(.*?)```", page.read_text(), re.S):
            for line in block.replace("\\\n", " ").splitlines():
                if HELM_COMMAND.match(line):
                    argv = shlex.split(line.split(" | ")[0], comments=True)
                    commands.append((page.name, argv))
    return commands


def value_options(argv: list[str]) -> list[str]:
    """The options of a documented command that set values, as `helm template` and `helm lint` take them."""
    kept = []
    for option, value in itertools.pairwise(argv):
        if option in VALUE_OPTIONS:
            kept += [option, value]
    kept += [arg for arg in argv if arg.split("=")[0] in VALUE_OPTIONS and "=" in arg]
    return kept


def test_the_docs_give_helm_commands() -> None:
    pages = {page for page, _ in documented_commands()}
    assert pages == {page.name for page in DOCUMENTED_COMMAND_PAGES}


@pytest.mark.parametrize("argv", [argv for _, argv in documented_commands()], ids=shlex.join)
def test_documented_helm_command_renders_and_lints_strictly(argv: list[str]) -> None:
    values = value_options(argv)
    assert "image.repository=" in " ".join(values), "the command leaves out the required image.repository"
    rendered = helm("template", "modelgate", str(CHART), "--namespace=modelgate-system", *values)
    assert rendered.returncode == 0, rendered.stderr
    assert of_kind([d for d in yaml.load_all(rendered.stdout, Loader=yaml.CSafeLoader) if d], "Deployment")
    linted = helm("lint", "--strict", str(CHART), "--namespace=modelgate-system", *values)
    assert linted.returncode == 0, linted.stdout + linted.stderr


def test_every_value_is_in_the_readmes_table() -> None:
    values_text = (CHART / "values.yaml").read_text()
    readme = (CHART / "README.md").read_text()
    table = "\n".join(values_table(values_text))
    assert table in readme, f"{CHART / 'README.md'}'s values table is stale: run `make generate`"
    documented = {row.path for row in value_rows(values_text)}
    for key in yaml.safe_load(values_text):
        assert any(path == key or path.startswith(f"{key}.") for path in documented), key


def test_an_undocumented_value_fails_generation() -> None:
    text = (CHART / "values.yaml").read_text() + "\nundocumentedValue: 1\n"
    with pytest.raises(UndocumentedValuesError, match="undocumentedValue"):
        values_table(text)


def test_a_nested_value_without_a_comment_is_undocumented() -> None:
    text = "# -- The pod.\npod:\n  # -- Its labels.\n  labels: {}\n  annotations: {}\n"
    with pytest.raises(UndocumentedValuesError, match=r"pod\.annotations"):
        value_rows(text)
    rows = value_rows(text.replace("  annotations", "  # -- Its annotations.\n  annotations"))
    assert [(row.path, row.default) for row in rows] == [
        ("pod", ""),
        ("pod.labels", "{}"),
        ("pod.annotations", "{}"),
    ]
