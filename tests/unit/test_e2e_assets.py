"""The container image, the kind end-to-end and the GitHub workflows, checked on a machine without
Docker or kind: the Dockerfile is parsed and its wheel built for real, the scripts go through
shellcheck, the workflows through actionlint, and the load generator and the model servers'
arguments from e2e/manifests run against the real model-server double on loopback.

(hadolint is not in Debian's packages, so the Dockerfile's rules are asserted here instead.)"""

from __future__ import annotations

import asyncio
import configparser
import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelgate.cli.main import build_parser as modelgate_parser
from testbed import binaries
from testbed.model_server_double import Behaviour, start_model_server
from testbed.model_server_double import build_parser as double_parser
from testbed.versions import REPO_ROOT

DOCKERFILE = REPO_ROOT / "Dockerfile"
DOCKERIGNORE = REPO_ROOT / ".dockerignore"
KIND_SCRIPT = REPO_ROOT / "e2e" / "kind.sh"
MANIFESTS = REPO_ROOT / "e2e" / "manifests"
WORKFLOWS = REPO_ROOT / ".github" / "workflows"
EXAMPLES = REPO_ROOT / "examples"
IMAGE_USER = 65532
# The address examples/rollout-*.yaml name, which e2e/kind.sh rewrites to its own Prometheus.
EXAMPLE_PROMETHEUS = "http://prometheus.monitoring:9090"


# -- a tiny Dockerfile parser ------------------------------------------------------------------------
@dataclass(frozen=True)
class Instruction:
    keyword: str  # upper case
    value: str  # the rest of the (joined) line
    line: int


@dataclass
class Stage:
    base: str  # with global ARGs substituted
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction:
        found = self.all(keyword)
        assert found, f"stage {self.name or self.base} has no {keyword}"
        return found[-1]


@dataclass
class Dockerfile:
    global_args: dict[str, str]
    stages: list[Stage]


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Lines with `\\` continuations joined; comments (and parser directives) dropped, also inside
    a continuation, as Docker does."""
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not pending):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        yield start, " ".join(part for part in pending if part)
        pending = []
    assert not pending, "the Dockerfile ends inside a line continuation"


def _substitute(value: str, variables: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: variables[m.group(1) or m.group(2)], value)


def parse_dockerfile(text: str) -> Dockerfile:
    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for line, logical in _logical_lines(text):
        keyword, _, value = logical.partition(" ")
        keyword, value = keyword.upper(), value.strip()
        if keyword == "FROM":
            words = [w for w in value.split() if not w.startswith("--platform=")]
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(_substitute(words[0], global_args), name))
        elif not stages:
            assert keyword == "ARG", f"line {line}: only ARG may come before the first FROM"
            arg_name, _, default = value.partition("=")
            global_args[arg_name] = default
        else:
            stages[-1].instructions.append(Instruction(keyword, value, line))
    return Dockerfile(global_args, stages)


def key_values(instruction: Instruction) -> dict[str, str]:
    """ENV / LABEL / ARG in the `key=value ...` form."""
    return dict(word.partition("=")[::2] for word in shlex.split(instruction.value))


def exec_form(instruction: Instruction) -> list[str]:
    parsed = json.loads(instruction.value)
    assert isinstance(parsed, list), f"line {instruction.line}: {instruction.keyword} is not exec form"
    return [str(word) for word in parsed]


@pytest.fixture(scope="module")
def dockerfile() -> Dockerfile:
    return parse_dockerfile(DOCKERFILE.read_text())


@pytest.fixture(scope="module")
def runtime(dockerfile: Dockerfile) -> Stage:
    return dockerfile.stages[-1]


# -- a minimal .dockerignore matcher -----------------------------------------------------------------
def dockerignore_patterns() -> list[str]:
    lines = [line.strip() for line in DOCKERIGNORE.read_text().splitlines()]
    patterns = [line.rstrip("/") for line in lines if line and not line.startswith("#")]
    # Re-inclusion (`!`) would need Docker's full rule set; this matcher does not have it.
    assert not any(p.startswith("!") for p in patterns)
    return patterns


def dockerignored(relative: str, patterns: list[str]) -> bool:
    """Whether Docker leaves `relative` (posix, from the context root) out of the build context:
    a pattern matches the path or one of its parent folders; `**/` matches at any depth."""
    parts = relative.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for pattern in patterns:
        if pattern.startswith("**/"):
            tail = pattern[3:]
            if any(fnmatch.fnmatchcase(part, tail) for part in parts):
                return True
        elif any(fnmatch.fnmatchcase(prefix, pattern) for prefix in prefixes):
            return True
    return False


def builder_copy_sources(dockerfile: Dockerfile) -> list[str]:
    sources: list[str] = []
    for copy in dockerfile.stages[0].all("COPY"):
        words = [w for w in copy.value.split() if not w.startswith("--")]
        sources.extend(w.rstrip("/") for w in words[:-1])
    return sources


# -- the Dockerfile ----------------------------------------------------------------------------------
def test_dockerfile_builds_in_a_builder_stage_and_runs_from_a_runtime_stage(dockerfile: Dockerfile) -> None:
    assert [s.name for s in dockerfile.stages] == ["builder", "runtime"]
    builder, runtime = dockerfile.stages
    assert any("pip wheel" in run.value for run in builder.all("RUN"))
    # The runtime stage copies nothing in: it installs the builder's wheels through a bind mount.
    assert runtime.all("COPY") == []


def test_base_images_are_python_3_11_slim_pinned_by_digest(dockerfile: Dockerfile, runtime: Stage) -> None:
    for stage in dockerfile.stages:
        image, _, digest = stage.base.partition("@")
        assert re.fullmatch(r"python:3\.11(\.\d+)?-slim(-[a-z]+)?", image), stage.base
        assert not image.endswith(":latest")
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest), f"{stage.base} is not pinned by digest"
    assert len({s.base for s in dockerfile.stages}) == 1, "builder and runtime must share one base"
    labels = key_values(runtime.last("LABEL"))
    assert dockerfile.stages[0].base.endswith("@" + labels["org.opencontainers.image.base.digest"])


def test_runtime_runs_as_a_numeric_non_root_user(runtime: Stage) -> None:
    user, _, group = runtime.last("USER").value.partition(":")
    # Numeric: the kubelet can only enforce runAsNonRoot on a numeric user.
    assert user.isdigit() and group.isdigit()
    assert int(user) == IMAGE_USER != 0
    # Nothing after USER switches back to root.
    assert runtime.instructions.index(runtime.last("USER")) > max(
        runtime.instructions.index(i) for i in runtime.all("RUN")
    )


def test_entrypoint_is_modelgate_run_and_default_command_is_accepted_by_its_parser(runtime: Stage) -> None:
    assert exec_form(runtime.last("ENTRYPOINT")) == ["modelgate", "run"]
    command = exec_form(runtime.last("CMD"))
    assert command == [
        "--all-namespaces",
        "--log-format=json",
        "--metrics-address=0.0.0.0:8080",
        "--health-address=0.0.0.0:8081",
    ]
    args = modelgate_parser().parse_args(["run", *command])
    assert args.all_namespaces and args.log_format == "json"
    exposed = {int(port) for expose in runtime.all("EXPOSE") for port in expose.value.split()}
    listening = {int(args.metrics_address.rpartition(":")[2]), int(args.health_address.rpartition(":")[2])}
    assert exposed == listening == {8080, 8081}


def test_runtime_writes_no_bytecode_and_keeps_home_in_tmp(runtime: Stage) -> None:
    env: dict[str, str] = {}
    for instruction in runtime.all("ENV"):
        env |= key_values(instruction)
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    assert env["PYTHONUNBUFFERED"] == "1"
    # With a read-only root filesystem /tmp is the one writable path.
    assert env["HOME"] == "/tmp"
    # Set after the install, so that pip still precompiles the bytecode into the image.
    env_line = min(i.line for i in runtime.all("ENV") if "PYTHONDONTWRITEBYTECODE" in i.value)
    assert all(run.line < env_line for run in runtime.all("RUN"))


def test_runtime_installs_only_the_builders_wheels(runtime: Stage) -> None:
    (install,) = runtime.all("RUN")
    assert "--mount=type=bind,from=builder,source=/wheels,target=/wheels" in install.value
    assert "--no-index" in install.value and "--find-links=/wheels" in install.value
    # By the distribution's name: the import package's (`modelgate`) is another project's on the index.
    distribution = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["name"]
    assert install.value.split("&&")[0].split()[-1] == distribution
    for tool in ("apt-get", "gcc", "build-essential", "git "):
        assert tool not in install.value


def test_every_file_pip_fetches_for_the_image_is_checked_against_the_lock(dockerfile: Dockerfile) -> None:
    """What pip takes from an index must match requirements-image.lock's hashes; everything else
    comes from the builder's checked wheels (--no-index)."""
    pip_commands = [
        command
        for stage in dockerfile.stages
        for run in stage.all("RUN")
        for command in run.value.split("&&")
        if re.search(r"pip (install|download|wheel)\b", command)
    ]
    assert len(pip_commands) == 4
    for command in pip_commands:
        words = command.split()
        checked = "--require-hashes" in words and words[words.index("-r") + 1] == "requirements-image.lock"
        assert checked or "--no-index" in words, command


def test_image_has_oci_labels_and_the_projects_version(runtime: Stage) -> None:
    labels = key_values(runtime.last("LABEL"))
    for key in ("title", "description", "version", "revision", "licenses", "base.name", "base.digest"):
        assert labels.get(f"org.opencontainers.image.{key}"), key
    args: dict[str, str] = {}
    for arg in runtime.all("ARG"):
        args |= key_values(arg)
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    assert args["VERSION"] == project["version"]
    assert labels["org.opencontainers.image.licenses"] == project["license"]


def test_dockerignore_keeps_local_state_out_and_the_build_inputs_in(dockerfile: Dockerfile) -> None:
    patterns = dockerignore_patterns()
    for local in (
        ".git",
        ".venv",
        ".localcluster",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".hypothesis",
    ):
        assert dockerignored(local, patterns), local
    assert dockerignored("operator/modelgate/__pycache__/kube.cpython-311.pyc", patterns)
    sources = builder_copy_sources(dockerfile)
    assert sources == ["requirements-image.lock", "pyproject.toml", "README.md", "operator"]
    for source in [
        *sources,
        "operator/modelgate/__init__.py",
        "testbed/traffic_driver.py",
    ]:
        assert not dockerignored(source, patterns), source


def test_wheel_built_from_the_docker_context_has_only_the_operator_and_its_console_scripts(
    dockerfile: Dockerfile, tmp_path: Path
) -> None:
    # The context the builder stage sees: its COPY sources, less what .dockerignore drops.
    patterns = dockerignore_patterns()
    context = tmp_path / "context"
    for source in builder_copy_sources(dockerfile):
        origin = REPO_ROOT / source
        if origin.is_dir():
            for path in sorted(origin.rglob("*")):
                relative = path.relative_to(REPO_ROOT).as_posix()
                if path.is_file() and not dockerignored(relative, patterns):
                    (context / relative).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, context / relative)
        else:
            context.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, context / source)
    out = tmp_path / "wheels"
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--disable-pip-version-check",
            ".",
            "-w",
            str(out),
        ],
        cwd=context,
        capture_output=True,
        text=True,
        check=False,
        timeout=240,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = out.glob("modelgate_operator-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        scripts = archive.read(entry_points).decode()
    for module in ("__init__", "cli/__init__", "core/engine", "reconciler"):
        assert f"modelgate/{module}.py" in names, module
    # The operator only: the test bed and the doc tooling are development code.
    modules = [n for n in names if n.endswith(".py")]
    assert modules and all(n.startswith("modelgate/") for n in modules), modules
    development = ("testbed", "tooling", "docs_gen", "model_server_double", "traffic_driver", "localcluster")
    assert not [n for n in modules if any(part in n for part in development)]
    assert not [n for n in names if n.endswith(".pyc") or "__pycache__" in n]
    parsed = configparser.ConfigParser()
    parsed.read_string(scripts)
    assert dict(parsed["console_scripts"]) == {
        "modelgate": "modelgate.cli:main",
        "kubectl-modelrollout": "modelgate.cli:main",
        "kubectl_complete-modelrollout": "modelgate.cli.completion_words:kubectl_complete",
    }


# -- scripts and workflows ---------------------------------------------------------------------------
def shell_scripts() -> list[Path]:
    scripts = [*sorted((REPO_ROOT / "e2e").glob("*.sh")), *sorted((REPO_ROOT / "hack").glob("*.sh"))]
    return [*scripts, REPO_ROOT / ".ci" / "run"]


def test_shell_scripts_pass_shellcheck() -> None:
    scripts = shell_scripts()
    assert KIND_SCRIPT in scripts
    # -x -P SCRIPTDIR: follow `.`-sourced files (hack/versions.env) relative to each script.
    result = subprocess.run(
        [str(binaries.binary("shellcheck")), "-x", "-P", "SCRIPTDIR", *map(str, scripts)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def workflows() -> list[Path]:
    return sorted(WORKFLOWS.glob("*.yaml"))


def test_workflows_pass_actionlint() -> None:
    assert [w.name for w in workflows()] == ["ci.yaml", "e2e-kind.yaml", "release.yaml"]
    # actionlint also runs shellcheck (on PATH) over every `run:` block.
    result = subprocess.run(
        [str(binaries.binary("actionlint")), "-color=false", *map(str, workflows())],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def load_workflow(path: Path) -> dict[Any, Any]:
    loaded = yaml.safe_load(path.read_text())
    assert isinstance(loaded, dict)
    return loaded


@pytest.mark.parametrize("path", workflows(), ids=lambda p: p.name)
def test_workflow_reads_only_by_default_with_pinned_actions(path: Path) -> None:
    workflow = load_workflow(path)
    # YAML 1.1 (PyYAML) reads the key `on` as True.
    triggers = workflow["on"] if "on" in workflow else workflow[True]
    # The release runs on version tags (tests/unit/test_release_workflow.py); the others on every change.
    if path.name != "release.yaml":
        assert {"push", "pull_request"} <= set(triggers)
    assert workflow["permissions"] == {"contents": "read"}
    for name, job in workflow["jobs"].items():
        assert job["runs-on"] == "ubuntu-latest", name
        assert 0 < job["timeout-minutes"] <= 90, name
    # Every action by full commit SHA, with the release it is in a comment for people.
    uses = re.findall(r"uses:\s*(\S+)(.*)", path.read_text())
    assert uses
    for action, comment in uses:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", action), action
        assert re.fullmatch(r"\s*# v\d+\.\d+\.\d+", comment), f"{action}: no `# vX.Y.Z` comment"


def run_steps(path: Path) -> list[str]:
    return [
        step["run"] for job in load_workflow(path)["jobs"].values() for step in job["steps"] if "run" in step
    ]


def test_ci_workflow_runs_the_ci_entry_point() -> None:
    assert "bash .ci/run" in run_steps(WORKFLOWS / "ci.yaml")
    assert "make test" in (REPO_ROOT / ".ci" / "run").read_text()


def test_e2e_workflow_runs_the_kind_script_with_pinned_tools() -> None:
    path = WORKFLOWS / "e2e-kind.yaml"
    steps = run_steps(path)
    assert "bash e2e/kind.sh" in steps
    (job,) = load_workflow(path)["jobs"].values()
    assert re.fullmatch(r"v\d+\.\d+\.\d+", job["env"]["KIND_VERSION"])
    install = next(step for step in steps if "go install" in step)
    assert 'sigs.k8s.io/kind@${KIND_VERSION}"' in install
    assert "sha256sum --check" in install  # kubectl is verified against the release's checksum


# -- e2e/kind.sh and its manifests -------------------------------------------------------------------
def script_references() -> list[str]:
    """Paths e2e/kind.sh names as "$root/..." or "$manifests/..." (relative to the repository)."""
    text = KIND_SCRIPT.read_text()
    found = re.findall(r"\$(root|manifests)/([\w./-]+)", text)
    return [f"e2e/manifests/{path}" if base == "manifests" else path for base, path in found]


def applied_manifests() -> list[Path]:
    return sorted({REPO_ROOT / ref for ref in script_references() if ref.startswith("e2e/manifests/")})


def manifest_documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.load_all(path.read_text(), Loader=yaml.CSafeLoader) if doc]


def test_kind_script_is_strict_cleans_up_and_names_files_that_exist() -> None:
    text = KIND_SCRIPT.read_text()
    assert text.startswith("#!/usr/bin/env bash\n")
    assert os.access(KIND_SCRIPT, os.X_OK)
    assert "\nset -euo pipefail\n" in text
    assert "trap on_exit EXIT" in text and 'KEEP:-0}" = 1' in text
    for reference in script_references():
        assert (REPO_ROOT / reference).exists(), reference
    # Every manifest is applied, so none goes stale without the cluster tests noticing.
    assert applied_manifests() == sorted(MANIFESTS.glob("*.yaml"))
    for example in ("examples/rollout-good.yaml", "examples/rollout-bad.yaml", "kind-config.yaml"):
        assert example in script_references()


def test_kind_script_uses_the_pinned_gateway_api_and_istio_versions() -> None:
    text = KIND_SCRIPT.read_text()
    assert '. "$root/hack/versions.env"' in text
    assert "releases/download/$GATEWAY_API_VERSION/standard-install.yaml" in text
    assert "istio_version=${ISTIO_API_VERSION#v}" in text
    assert "--set image.repository=modelgate --set image.tag=e2e --set image.pullPolicy=Never" in text


def test_doubles_image_is_the_operator_image_plus_the_test_bed() -> None:
    text = KIND_SCRIPT.read_text()
    assert '-f "$root/e2e/testbed.Dockerfile" --build-arg BASE="$image"' in text
    assert 'load docker-image "$image" "$testbed_image"' in text
    testbed_dockerfile = (REPO_ROOT / "e2e" / "testbed.Dockerfile").read_text()
    assert "COPY testbed/ /opt/modelgate-dev/testbed/" in testbed_dockerfile
    assert "ENV PYTHONPATH=/opt/modelgate-dev" in testbed_dockerfile


@pytest.mark.parametrize("path", sorted(MANIFESTS.glob("*.yaml")), ids=lambda p: p.name)
def test_e2e_manifest_is_namespaced_and_portable(path: Path) -> None:
    for doc in manifest_documents(path):
        what = f"{path.name}: {doc['kind']} {doc['metadata']['name']}"
        # `kubectl apply -n <ns>` decides the namespace; nothing cluster-scoped.
        assert "namespace" not in doc["metadata"], what
        assert doc["kind"] not in {"Namespace", "ClusterRole", "ClusterRoleBinding", "GatewayClass"}, what
        for subject in doc.get("subjects", []):
            assert "namespace" not in subject, what
        for container in containers(doc):
            image = container["image"]
            if image in ("modelgate:e2e", "modelgate-testbed:e2e"):
                assert container["imagePullPolicy"] == "Never", what  # loaded by `kind load`, never pulled
            else:
                assert re.fullmatch(r"[\w./-]+:v?\d+\.\d+\.\d+", image), f"{what}: {image} is not pinned"


def containers(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spec = doc.get("spec", {}).get("template", {}).get("spec", {})
    return list(spec.get("containers", []))


def examples_serving() -> list[dict[str, Any]]:
    return manifest_documents(EXAMPLES / "serving.yaml")


def test_e2e_fleet_and_route_are_those_of_examples_serving() -> None:
    def shape(docs: list[dict[str, Any]]) -> dict[tuple[str, str], Any]:
        shapes: dict[tuple[str, str], Any] = {}
        for doc in docs:
            if doc["kind"] == "Service":
                shapes[("Service", doc["metadata"]["name"])] = [p["port"] for p in doc["spec"]["ports"]]
            elif doc["kind"] == "Deployment":
                shapes[("Deployment", doc["metadata"]["name"])] = doc["spec"]["replicas"]
            elif doc["kind"] == "HTTPRoute":
                shapes[("HTTPRoute", doc["metadata"]["name"])] = doc["spec"]
        return shapes

    e2e = manifest_documents(MANIFESTS / "models.yaml") + manifest_documents(MANIFESTS / "gateway.yaml")
    assert shape(e2e) == shape(examples_serving())


def test_second_route_matches_the_bad_rollouts_backends() -> None:
    (route,) = manifest_documents(MANIFESTS / "route-v2-v3.yaml")
    rollout = yaml.safe_load((EXAMPLES / "rollout-bad.yaml").read_text())
    routing = rollout["spec"]["trafficRouting"]["gatewayAPI"]
    assert route["metadata"]["name"] == routing["httpRoute"]
    weights = {ref["name"]: ref["weight"] for ref in route["spec"]["rules"][0]["backendRefs"]}
    assert weights == {routing["incumbentBackend"]: 100, routing["candidateBackend"]: 0}
    (serving_route,) = [d for d in examples_serving() if d["kind"] == "HTTPRoute"]
    assert route["spec"]["parentRefs"] == serving_route["spec"]["parentRefs"]


def test_examples_name_the_prometheus_address_that_kind_sh_rewrites() -> None:
    text = KIND_SCRIPT.read_text()
    assert f"example_prometheus={EXAMPLE_PROMETHEUS}\n" in text
    assert "e2e_prometheus=http://prometheus.$namespace.svc:9090\n" in text
    for example in ("rollout-good.yaml", "rollout-bad.yaml"):
        rollout = yaml.safe_load((EXAMPLES / example).read_text())
        assert rollout["spec"]["analysis"]["prometheus"]["address"] == EXAMPLE_PROMETHEUS


def test_prometheus_scrapes_the_model_pods_with_the_labels_the_presets_select_by() -> None:
    docs = {(d["kind"], d["metadata"]["name"]): d for d in manifest_documents(MANIFESTS / "prometheus.yaml")}
    config = yaml.safe_load(docs[("ConfigMap", "prometheus-config")]["data"]["prometheus.yml"])
    (job,) = config["scrape_configs"]
    (discovery,) = job["kubernetes_sd_configs"]
    assert discovery == {"role": "pod", "namespaces": {"own_namespace": True}}
    targets = {r["target_label"]: r["source_labels"] for r in job["relabel_configs"] if "target_label" in r}
    assert targets["namespace"] == ["__meta_kubernetes_namespace"]
    assert targets["pod"] == ["__meta_kubernetes_pod_name"]
    # Scrapes at least as often as the examples analyse.
    assert config["global"]["scrape_interval"] == "2s"
    assert (
        yaml.safe_load((EXAMPLES / "rollout-good.yaml").read_text())["spec"]["analysis"]["interval"] == "2s"
    )
    service = docs[("Service", "prometheus")]
    assert [p["port"] for p in service["spec"]["ports"]] == [9090]
    # The model Pods opt in, on the port the relabelling keeps.
    for doc in manifest_documents(MANIFESTS / "models.yaml"):
        if doc["kind"] == "Deployment":
            template = doc["spec"]["template"]
            assert template["metadata"]["annotations"] == {"prometheus.io/scrape": "true"}
            assert [p["name"] for p in containers(doc)[0]["ports"]] == ["http"]


def double_containers() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for doc in manifest_documents(MANIFESTS / "models.yaml"):
        for container in containers(doc):
            if container.get("command") == ["python", "-m", "testbed.model_server_double"]:
                found.append((doc["metadata"]["name"], container))
    return found


def test_model_servers_are_started_with_arguments_the_double_accepts() -> None:
    parser = double_parser()
    fleet = dict(double_containers())
    assert set(fleet) == {"chat-v1", "chat-v2", "chat-v3"}
    for name, container in fleet.items():
        args = parser.parse_args(container["args"])
        assert (args.host, args.port, args.model_name) == ("0.0.0.0", 8000, name)
        assert args.allow_any_host  # a Pod binds its own network namespace's address
        assert args.error_rate == (0.08 if name == "chat-v3" else 0.0), name


def loadgen() -> tuple[str, dict[str, str]]:
    (job,) = manifest_documents(MANIFESTS / "loadgen.yaml")
    (container,) = containers(job)
    assert container["command"] == ["python", "-c"]
    return container["args"][0], {e["name"]: e["value"] for e in container["env"]}


def test_load_generator_targets_the_gateways_service() -> None:
    _, env = loadgen()
    (gateway,) = [d for d in manifest_documents(MANIFESTS / "gateway.yaml") if d["kind"] == "Gateway"]
    (listener,) = gateway["spec"]["listeners"]
    # istiod names the Service of a Gateway `<gateway>-<gatewayclass>`.
    service = f"{gateway['metadata']['name']}-{gateway['spec']['gatewayClassName']}"
    assert listener["port"] == 80
    assert env["TARGET"] == f"http://{service}/v1/chat/completions"
    # Bounded: a request budget and a duration, both inside the Job's deadline.
    (job,) = manifest_documents(MANIFESTS / "loadgen.yaml")
    assert int(env["DURATION_SECONDS"]) < job["spec"]["activeDeadlineSeconds"]
    assert int(env["MAX_REQUESTS"]) <= int(env["RPS"]) * int(env["DURATION_SECONDS"])


def run_loadgen(behaviour: Behaviour, **env: str) -> list[dict[str, Any]]:
    """The Job's script as a process, against a double on loopback; its JSON report lines."""
    script, _ = loadgen()

    async def scenario() -> tuple[int | None, bytes, bytes]:
        server = await start_model_server(behaviour, model_name="chat-v1")
        try:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-c",
                script,
                env={
                    "PATH": os.environ.get("PATH", ""),
                    "no_proxy": "*",
                    "TARGET": f"{server.url}/v1/chat/completions",
                    **env,
                },
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
            )
            out, err = await asyncio.wait_for(process.communicate(), timeout=60)
            return process.returncode, out, err
        finally:
            await server.close()

    returncode, out, err = asyncio.run(scenario())
    assert returncode == 0, err.decode()
    return [json.loads(line) for line in out.decode().splitlines()]


def test_load_generator_stops_at_its_request_budget_and_reports_outcomes() -> None:
    reports = run_loadgen(
        Behaviour(error_rate=0.1), RPS="500", DURATION_SECONDS="60", MAX_REQUESTS="40", REPORT_EVERY="20"
    )
    # The double fails exactly 10% of 40 requests.
    assert reports == [
        {"sent": 20, "outcomes": {"200": 18, "500": 2}},
        {"sent": 40, "outcomes": {"200": 36, "500": 4}},
        {"done": True, "sent": 40, "outcomes": {"200": 36, "500": 4}},
    ]


def test_load_generator_stops_at_its_deadline() -> None:
    reports = run_loadgen(
        Behaviour(), RPS="10", DURATION_SECONDS="1", MAX_REQUESTS="100000", REPORT_EVERY="1000"
    )
    (final,) = reports
    # About 10 requests in one second at 10 per second; never the request budget.
    assert final["done"] is True
    assert 1 <= final["sent"] <= 12
    assert final["outcomes"] == {"200": final["sent"]}
