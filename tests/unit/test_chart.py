"""charts/modelgate without a cluster: `helm lint`, `helm template` for every documented values
combination, least-privilege RBAC, the hardened Deployment and the values schema. Its crds/ is
written by `make generate` (tests/unit/test_generated_files.py)."""

from __future__ import annotations

import functools
import ipaddress
import pickle
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from modelgate.api.addresses import allowed_addresses, token_may_go
from modelgate.egress import TOKEN_ADDRESSES_ENV
from modelgate.kube.checks import CHECK_LABEL
from modelgate.routers import ROUTERS
from testbed.binaries import binary
from testbed.versions import REPO_ROOT, pinned_versions

CHART = REPO_ROOT / "charts" / "modelgate"
MIN_KUBE_VERSION = "1.30.0"  # Chart.yaml's kubeVersion floor: the chart must render there
NAMESPACE = "modelgate-system"
# image.repository has no default in a checkout's chart (a release stamps it): the tests' build.
REPOSITORY = "registry.example/modelgate"
Object = dict[str, Any]
# Verbs the operator never uses; the last three would let it grant itself more. It deletes one kind
# of object only: the gate's check Jobs, which it creates itself.
FORBIDDEN_VERBS = {"delete", "deletecollection", "escalate", "bind", "impersonate"}
DELETABLE = {"jobs"}
# What each registered router's record grants (tests/unit/test_router_records.py: generated into the chart).
ROUTER_RIGHTS = {
    (rule.api_group, resource, verb)
    for kind in ROUTERS.values()
    for rule in kind.rbac_rules
    for resource in rule.resources
    for verb in rule.verbs
}

# The roles the chart makes for people (rollout-policies.yaml), not the operator: tests of them are
# in test_chart_rollout_policies.py.
USER_ROLES = ("-policy-edit", "-policy-view", "-cluster-policy-reader", "-cluster-policy-writer")

# Every combination values.yaml documents.
COMBINATIONS: dict[str, Object] = {
    "default": {},
    "cluster scope": {"rbac": {"scope": "cluster"}},
    "namespaces scope": {"rbac": {"scope": "namespaces"}, "watchNamespaces": ["team-a", "team-b"]},
    "serviceMonitor": {"serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus"}}},
    "podDisruptionBudget": {"podDisruptionBudget": {"enabled": True}},
    "grafanaDashboard": {"grafanaDashboard": {"enabled": True}},
    "prometheusRule": {"prometheusRule": {"enabled": True}},
    "prometheusSecrets": {"rbac": {"prometheusSecrets": ["prom-token", "prom-token-2"]}},
    "scaleDownIncumbents": {"rbac": {"scaleDownIncumbents": True}},
    "notifications": {
        "rbac": {"notificationSecrets": ["team-hooks"]},
        "notifications": {
            "defaults": {
                "receivers": [
                    {"name": "ops", "kind": "slack", "urlSecretRef": {"name": "ops-hooks", "key": "slack"}}
                ],
                "on": ["RolledBack", "Failed"],
            }
        },
    },
    "no RBAC, existing ServiceAccount": {
        "rbac": {"create": False},
        "serviceAccount": {"create": False, "name": "ops-provided"},
    },
    "rolloutSelector": {"rolloutSelector": "modelgate.io/shard=a"},
    "tokenAddresses": {
        "tokenAddresses": ["https://prometheus.monitoring:9090", "https://mimir.example/prom"]
    },
    "gateNetworkPolicy": {
        "gateNetworkPolicy": {
            "enabled": True,
            "namespaces": ["team-a", "team-b"],
            "egress": [
                {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "judges"}}}]}
            ],
            "otherAddresses": True,
            "blockedCidrs": ["10.96.0.1/32", "fd00:10:96::1/128"],
        }
    },
    "refusalProxy": {"refusalProxy": {"enabled": True, "models": ["llama-3.1-8b"]}},
    "images by digest": {
        "image": {"digest": "sha256:" + "a" * 64},
        "refusalProxy": {
            "enabled": True,
            "image": {"repository": "proxy", "tag": "", "digest": "sha256:" + "b" * 64},
        },
    },
    "rollout policies": {
        "rolloutPolicies": {
            "aggregateToUserRoles": False,
            "clusterReaders": [],
            "clusterWriters": [
                {"kind": "Group", "name": "platform", "apiGroup": "rbac.authorization.k8s.io"}
            ],
            "defaultPolicy": {"create": False, "name": "vllm-gateway", "prometheus": "http://prom:9090"},
        }
    },
    "peering": {"replicas": 2, "peering": {"enabled": True, "name": "", "lifetime": 60}},
    "peering in namespaces scope": {
        "replicas": 3,
        "peering": {"enabled": True, "name": "mg-peers", "lifetime": 30},
        "rbac": {"scope": "namespaces"},
        "watchNamespaces": ["team-a", "team-b"],
    },
    "custom check images": {
        "gate": {"customImages": {"allowed": True, "imageAllowlist": ["ghcr\\.io/team/.*"]}},
    },
    "gate Jobs in some namespaces": {"rbac": {"gateJobNamespaces": ["team-a"]}},
    "check ServiceAccounts": {
        "rbac": {"scope": "namespaces"},
        "watchNamespaces": ["team-a", "team-b"],
        "gate": {"checkServiceAccount": {"create": True}, "customImages": {"allowed": True}},
    },
    "everything": {
        "rbac": {"scope": "namespaces", "prometheusSecrets": ["prom-token"], "scaleDownIncumbents": True},
        "watchNamespaces": ["team-a", "team-b"],
        "rolloutSelector": "modelgate.io/shard in (a, b)",
        "replicas": 2,
        "peering": {"enabled": True, "name": "", "lifetime": 60},
        "serviceMonitor": {"enabled": True},
        "podDisruptionBudget": {"enabled": True},
        "grafanaDashboard": {"enabled": True},
        "prometheusRule": {"enabled": True},
        "refusalProxy": {"enabled": True, "models": ["chat: v2"], "patterns": ["^Nope\\b"], "port": 8081},
        "image": {"tag": "0.1.1", "pullPolicy": "Always"},
        "logFormat": "console",
        "logLevel": "debug",
        "env": [{"name": "TZ", "value": "UTC"}],
        "podAnnotations": {"example.com/team": "ml"},
        "priorityClassName": "system-cluster-critical",
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ops", "effect": "NoSchedule"}],
        "affinity": {"nodeAffinity": {}},
        "imagePullSecrets": [{"name": "regcred"}],
        "deploymentAnnotations": {"example.com/owner": "ml-platform"},
        "extraVolumes": [{"name": "ca", "configMap": {"name": "prometheus-ca"}}],
        "extraVolumeMounts": [{"name": "ca", "mountPath": "/etc/prometheus-ca", "readOnly": True}],
        "livenessProbe": {"periodSeconds": 30},
        "extraObjects": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "{{ .Release.Name }}-x"}}
        ],
    },
}


@functools.cache  # the same values rendered by several tests: helm runs once (its answers are strings)
def helm(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary("helm")), *args], input=stdin, capture_output=True, text=True, check=False, timeout=60
    )


def with_repository(values: Object | None) -> Object:
    """`values` with image.repository set, unless they set it themselves."""
    values = values or {}
    return values | {"image": {"repository": REPOSITORY, **values.get("image", {})}}


def kube_version_args(kube_version: str | None) -> list[str]:
    """None leaves the Kubernetes version to helm's default, as `helm template` users do."""
    return [] if kube_version is None else [f"--kube-version={kube_version}"]


def render(
    values: Object | None = None,
    *,
    release: str = "mg",
    namespace: str = NAMESPACE,
    kube_version: str | None = MIN_KUBE_VERSION,
) -> list[Object]:
    """`helm template` with `values` (as a values file on stdin); the objects it renders."""
    result = helm(
        "template",
        release,
        str(CHART),
        f"--namespace={namespace}",
        *kube_version_args(kube_version),
        "--values=-",
        stdin=yaml.safe_dump(with_repository(values)),
    )
    assert result.returncode == 0, result.stderr
    return pickle.loads(_documents(result.stdout))  # a copy of its own for each test to change


@functools.cache
def _documents(rendered: str) -> bytes:
    """A render's documents, parsed once however many tests render the same values (the CRDs inside
    are large: libyaml, as Python's own parser takes a second over them)."""
    return pickle.dumps([doc for doc in yaml.load_all(rendered, Loader=yaml.CSafeLoader) if doc])


def render_error(values: Object, kube_version: str | None = None) -> str:
    result = helm(
        "template",
        "mg",
        str(CHART),
        *kube_version_args(kube_version),
        "--values=-",
        stdin=yaml.safe_dump(with_repository(values)),
    )
    assert result.returncode != 0, f"rendered although it should not:\n{result.stdout}"
    return result.stderr


def of_kind(objects: list[Object], kind: str) -> list[Object]:
    return [o for o in objects if o["kind"] == kind]


def the(objects: list[Object], kind: str) -> Object:
    (found,) = of_kind(objects, kind)
    return found


def rules(objects: list[Object]) -> Iterator[tuple[Object, Object]]:
    """(Role or ClusterRole, rule) for every RBAC rule rendered but the people's (USER_ROLES)."""
    for role in objects:
        if role["kind"] in ("Role", "ClusterRole") and not role["metadata"]["name"].endswith(USER_ROLES):
            for rule in role["rules"]:
                yield role, rule


def operator_role(objects: list[Object]) -> Object:
    """The operator's own ClusterRole (not the one reading cluster policies, not the people's)."""
    (role,) = [r for r in of_kind(objects, "ClusterRole") if r["metadata"]["name"] == "mg-modelgate"]
    return role


def container(objects: list[Object]) -> Object:
    (only,) = the(objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    return only


def test_helm_is_the_pinned_release() -> None:
    # hack/build-bins.sh must build helm with its release's ldflags; without them it says "v3.22".
    result = helm("version", "--template", "{{.Version}}")
    assert result.returncode == 0, result.stderr
    assert result.stdout == pinned_versions()["HELM_VERSION"]


def test_chart_renders_at_helm_default_kubernetes_version() -> None:
    # A helm built without its release's ldflags assumes Kubernetes 1.20, below the chart's floor.
    objects = render(kube_version=None)
    assert the(objects, "Deployment")["metadata"]["name"] == "mg-modelgate"


@pytest.mark.parametrize("strict", [False, True], ids=["lint", "lint --strict"])
@pytest.mark.parametrize("values", ["default", "namespaces scope", "everything"])
def test_helm_lint_passes(strict: bool, values: str, tmp_path: Path) -> None:
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(with_repository(COMBINATIONS[values])))
    result = helm("lint", str(CHART), f"--values={values_file}", *(["--strict"] if strict else []))
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", COMBINATIONS)
def test_every_combination_renders_least_privilege_rbac(name: str) -> None:
    for role, rule in rules(render(COMBINATIONS[name])):
        where = f"{role['kind']} {role['metadata']['name']}: {rule}"
        for field in ("apiGroups", "resources", "verbs", "resourceNames"):
            assert "*" not in rule.get(field, []), where
        forbidden = FORBIDDEN_VERBS - {"delete"} if set(rule["resources"]) <= DELETABLE else FORBIDDEN_VERBS
        assert not forbidden & set(rule["verbs"]), where
        if "secrets" in rule["resources"]:
            assert rule["verbs"] == ["get"] and rule.get("resourceNames"), where


@pytest.mark.parametrize("name", COMBINATIONS)
def test_every_combination_renders_a_hardened_deployment(name: str) -> None:
    values = COMBINATIONS[name]
    objects = render(values)
    deployment = the(objects, "Deployment")
    assert deployment["spec"]["replicas"] == values.get("replicas", 1)
    if "peering" in values:
        # New pods start as standbys: an update never leaves the rollouts without an operator.
        assert deployment["spec"]["strategy"] == {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
        }
    else:  # standalone: the old pod is gone before the new one starts
        assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    pod = deployment["spec"]["template"]["spec"]
    operator = container(objects)
    assert operator["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert {"name": "tmp", "mountPath": "/tmp"} in operator["volumeMounts"]
    assert {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}} in pod["volumes"]
    assert operator["resources"]["requests"] and operator["resources"]["limits"]
    for probe in ("livenessProbe", "readinessProbe"):
        assert operator[probe]["httpGet"] == {"path": "/healthz", "port": "health"}
    # Inside the pod the endpoints must listen on every interface, for the kubelet and Prometheus.
    assert "--metrics-address=0.0.0.0:8080" in operator["args"]
    assert "--health-address=0.0.0.0:8081" in operator["args"]
    ports = {p["name"]: p["containerPort"] for p in operator["ports"]}
    assert ports == {"http-metrics": 8080, "health": 8081}
    assert pod["serviceAccountName"] == (
        "ops-provided" if name == "no RBAC, existing ServiceAccount" else "mg-modelgate"
    )


def test_names_that_yaml_reads_as_booleans_stay_strings() -> None:
    # `helm install on -n no` must not render `name: on` (true) or `namespace: no` (false).
    values = {**COMBINATIONS["everything"], "watchNamespaces": ["yes", "off"], "priorityClassName": "on"}
    for obj in render(values, release="on", namespace="no"):
        metadata = obj["metadata"]
        texts = [metadata["name"], metadata.get("namespace", ""), *metadata.get("labels", {}).values()]
        texts += [s.get("namespace", "") for s in obj.get("subjects", [])]
        assert all(isinstance(text, str) for text in texts), metadata


def test_default_renders_the_operator_watching_all_namespaces() -> None:
    objects = render()
    assert sorted(o["kind"] for o in objects) == [
        "ClusterModelRolloutPolicy",  # rolloutPolicies.defaultPolicy
        *["ClusterRole"] * 6,  # the operator's two, and the people's four (rolloutPolicies)
        *["ClusterRoleBinding"] * 3,  # the operator's two, and rolloutPolicies.clusterReaders
        *["CustomResourceDefinition"] * 4,
        "Deployment",
        "FlowSchema",  # apiRequests.flowControl
        "PriorityLevelConfiguration",
        "Service",
        "ServiceAccount",
        "ValidatingAdmissionPolicy",  # storage Secrets (gate.storageSecrets.requireReadRights)
        "ValidatingAdmissionPolicy",  # token and receiver Secrets (secretRedirects.requireReadRights)
        "ValidatingAdmissionPolicyBinding",
        "ValidatingAdmissionPolicyBinding",
    ]
    operator = container(objects)
    assert operator["image"] == f"{REPOSITORY}:0.1.0"
    assert operator["command"] == ["modelgate"]
    assert operator["args"][:2] == ["run", "--all-namespaces"]
    assert "--log-format=json" in operator["args"]
    assert "--log-level=info" in operator["args"]


def test_cluster_scope_grants_exactly_what_the_operator_uses() -> None:
    objects = render(COMBINATIONS["cluster scope"])
    granted = {
        (g, r, v)
        for _, rule in rules(objects)
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }
    assert granted == {
        *(("modelgate.io", "modelrollouts", v) for v in ("get", "list", "watch", "patch")),
        ("modelgate.io", "modelrollouts/status", "patch"),
        *(("modelgate.io", "modelevaluations", v) for v in ("get", "list", "watch")),
        ("modelgate.io", "modelevaluations/status", "patch"),
        *(("modelgate.io", "modelrolloutpolicies", v) for v in ("get", "list", "watch")),
        *(("modelgate.io", "clustermodelrolloutpolicies", v) for v in ("get", "list", "watch")),
        *(("apps", "deployments", v) for v in ("get", "list", "watch")),
        *ROUTER_RIGHTS,
        *(("inference.networking.k8s.io", "inferencepools", v) for v in ("get", "list", "watch")),
        *(("apps", "statefulsets", v) for v in ("get", "list", "watch")),
        *(("leaderworkerset.x-k8s.io", "leaderworkersets", v) for v in ("get", "list", "watch")),
        ("", "pods", "list"),
        *(("batch", "jobs", v) for v in ("get", "list", "watch", "create", "delete")),
        ("", "configmaps", "get"),
        ("", "services", "get"),
        ("events.k8s.io", "events", "create"),
    }
    operator = [{"kind": "ServiceAccount", "name": "mg-modelgate", "namespace": NAMESPACE}]
    bindings = [b for b in of_kind(objects, "ClusterRoleBinding") if b["subjects"] == operator]
    assert sorted(b["roleRef"]["name"] for b in bindings) == ["mg-modelgate", "mg-modelgate-cluster-policies"]
    assert not of_kind(objects, "Role") and not of_kind(objects, "RoleBinding")


def test_namespaces_scope_grants_namespaced_rights_only_in_the_watched_namespaces() -> None:
    objects = render(COMBINATIONS["namespaces scope"])
    assert sorted(r["metadata"]["namespace"] for r in of_kind(objects, "Role")) == ["team-a", "team-b"]
    for binding in of_kind(objects, "RoleBinding"):
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": "mg-modelgate",
        }
        assert binding["subjects"] == [
            {"kind": "ServiceAccount", "name": "mg-modelgate", "namespace": NAMESPACE}
        ]
    # Nothing cluster-wide for the operator but reading ClusterModelRolloutPolicies (cluster-scoped):
    # kopf runs without cluster scans (modelgate.handlers).
    cluster_rules = [rule for role, rule in rules(objects) if role["kind"] == "ClusterRole"]
    assert cluster_rules == [
        {
            "apiGroups": ["modelgate.io"],
            "resources": ["clustermodelrolloutpolicies"],
            "verbs": ["get", "list", "watch"],
        }
    ]
    args = container(objects)["args"]
    assert "--namespace=team-a" in args and "--namespace=team-b" in args
    assert "--all-namespaces" not in args


def kopf_rules(objects: list[Object]) -> list[tuple[str, Object]]:
    return [(role["kind"], rule) for role, rule in rules(objects) if rule["apiGroups"] == ["kopf.dev"]]


def test_peering_in_cluster_scope_grants_only_the_releases_cluster_peering() -> None:
    objects = render(COMBINATIONS["peering"])
    assert kopf_rules(objects) == [
        (
            "ClusterRole",
            {"apiGroups": ["kopf.dev"], "resources": ["clusterkopfpeerings"], "verbs": ["list", "watch"]},
        ),
        (
            "ClusterRole",
            {
                "apiGroups": ["kopf.dev"],
                "resources": ["clusterkopfpeerings"],
                "resourceNames": ["mg-modelgate"],
                "verbs": ["get", "patch"],
            },
        ),
    ]
    (peering,) = of_kind(objects, "ClusterKopfPeering")
    assert peering["apiVersion"] == "kopf.dev/v1" and peering["metadata"]["name"] == "mg-modelgate"
    args = container(objects)["args"]
    assert "--peering=mg-modelgate" in args and "--peering-lifetime=60" in args


def test_peering_in_namespaces_scope_uses_a_peering_object_per_watched_namespace() -> None:
    objects = render(COMBINATIONS["peering in namespaces scope"])
    peerings = of_kind(objects, "KopfPeering")
    assert sorted((p["metadata"]["namespace"], p["metadata"]["name"]) for p in peerings) == [
        ("team-a", "mg-peers"),
        ("team-b", "mg-peers"),
    ]
    assert not of_kind(objects, "ClusterKopfPeering")
    granted = kopf_rules(objects)
    assert {kind for kind, _ in granted} == {"Role"}
    assert {
        (r["resources"][0], tuple(r["verbs"]), tuple(r.get("resourceNames", []))) for _, r in granted
    } == {
        ("kopfpeerings", ("list", "watch"), ()),
        ("kopfpeerings", ("get", "patch"), ("mg-peers",)),
    }
    args = container(objects)["args"]
    assert "--peering=mg-peers" in args and "--peering-lifetime=30" in args


def test_without_peering_nothing_of_kopfs_is_rendered_or_granted() -> None:
    objects = render(COMBINATIONS["everything"] | {"replicas": 1, "peering": {"enabled": False}})
    assert not kopf_rules(objects)
    assert not {o["kind"] for o in objects} & {"KopfPeering", "ClusterKopfPeering"}
    assert not [arg for arg in container(objects)["args"] if arg.startswith("--peering")]


def test_the_rollout_selector_is_passed_to_the_operator() -> None:
    assert "--selector=modelgate.io/shard=a" in container(render(COMBINATIONS["rolloutSelector"]))["args"]
    assert "--selector=modelgate.io/shard in (a, b)" in container(render(COMBINATIONS["everything"]))["args"]
    assert not [arg for arg in container(render())["args"] if arg.startswith("--selector")]


def test_the_pdb_keeps_all_replicas_but_one() -> None:
    objects = render({**COMBINATIONS["peering"], **COMBINATIONS["podDisruptionBudget"]})
    assert the(objects, "PodDisruptionBudget")["spec"]["maxUnavailable"] == 1


def test_prometheus_secrets_are_granted_by_name_only() -> None:
    secret_rule = {
        "apiGroups": [""],
        "resources": ["secrets"],
        "resourceNames": ["prom-token", "prom-token-2"],
        "verbs": ["get"],
    }
    assert secret_rule in operator_role(render(COMBINATIONS["prometheusSecrets"]))["rules"]
    assert not [rule for _, rule in rules(render()) if "secrets" in rule["resources"]]
    for role in of_kind(render(COMBINATIONS["everything"]), "Role"):
        assert {**secret_rule, "resourceNames": ["prom-token"]} in role["rules"]


def test_deployment_scale_is_granted_only_when_enabled() -> None:
    scale_rule = {
        "apiGroups": ["apps"],
        "resources": ["deployments/scale", "statefulsets/scale"],
        "verbs": ["patch"],
    }
    lws_rule = {
        "apiGroups": ["leaderworkerset.x-k8s.io"],
        "resources": ["leaderworkersets/scale"],
        "verbs": ["patch"],
    }
    granted = operator_role(render(COMBINATIONS["scaleDownIncumbents"]))["rules"]
    assert scale_rule in granted and lws_rule in granted
    assert not [rule for _, rule in rules(render()) if any(r.endswith("/scale") for r in rule["resources"])]
    for role in of_kind(render(COMBINATIONS["everything"]), "Role"):
        assert scale_rule in role["rules"]


def test_extra_workloads_are_granted_their_resource_and_scale_and_its_patch_with_scale_down() -> None:
    extra = {"group": "serving.example.com", "resource": "inferenceservers"}
    read = {
        "apiGroups": ["serving.example.com"],
        "resources": ["inferenceservers", "inferenceservers/scale"],
        "verbs": ["get"],
    }
    scale = {
        "apiGroups": ["serving.example.com"],
        "resources": ["inferenceservers/scale"],
        "verbs": ["patch"],
    }
    reading = operator_role(render({"rbac": {"extraWorkloads": [extra]}}))["rules"]
    assert read in reading and scale not in reading
    scaling = operator_role(render({"rbac": {"extraWorkloads": [extra], "scaleDownIncumbents": True}}))
    assert read in scaling["rules"] and scale in scaling["rules"]


@pytest.mark.parametrize("group", ["", "*", "apps", "rbac.authorization.k8s.io/"])
def test_an_extra_workload_of_the_core_or_a_wildcard_group_is_refused_naming_the_field(group: str) -> None:
    """The core group ("" with resource secrets would grant get on every Secret) and wildcards."""
    error = render_error({"rbac": {"extraWorkloads": [{"group": group, "resource": "secrets"}]}})
    assert "extraWorkloads" in error and "group" in error, error


def test_one_edit_and_scale_down_grant_the_deployments_scale_once() -> None:
    role = operator_role(render({"rbac": {"scaleDownIncumbents": True}, "oneEdit": {"enabled": True}}))
    scale = [rule for rule in role["rules"] if "deployments/scale" in rule["resources"]]
    assert len(scale) == 1, scale


def test_no_rbac_and_an_existing_service_account_render_neither() -> None:
    kinds = {o["kind"] for o in render(COMBINATIONS["no RBAC, existing ServiceAccount"])}
    policy = {"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}  # storage Secrets
    flow_control = {"FlowSchema", "PriorityLevelConfiguration"}  # for the existing ServiceAccount too
    shipped = "ClusterModelRolloutPolicy"  # rolloutPolicies.defaultPolicy: not RBAC
    kinds_wanted = {"CustomResourceDefinition", "Deployment", "Service", shipped, *policy, *flow_control}
    assert kinds == kinds_wanted


def test_the_flow_schema_classifies_the_operators_service_account_per_namespace() -> None:
    objects = render({"serviceAccount": {"create": False, "name": "platform-operator"}})
    schema, level = the(objects, "FlowSchema")["spec"], the(objects, "PriorityLevelConfiguration")
    assert schema["priorityLevelConfiguration"]["name"] == level["metadata"]["name"]
    assert schema["distinguisherMethod"]["type"] == "ByNamespace"
    (rule,) = schema["rules"]
    account = the(objects, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"]
    assert account == "platform-operator"
    assert rule["subjects"] == [
        {"kind": "ServiceAccount", "serviceAccount": {"name": account, "namespace": NAMESPACE}}
    ]
    off = render({"apiRequests": {"flowControl": {"enabled": False}}})
    assert not {o["kind"] for o in off} & {"FlowSchema", "PriorityLevelConfiguration"}


def test_request_rate_flags_are_passed_only_when_set() -> None:
    assert not [arg for arg in container(render())["args"] if arg.startswith("--api-")]
    args = container(render({"apiRequests": {"qps": 150, "burst": 300}}))["args"]
    assert "--api-qps=150" in args and "--api-burst=300" in args


def test_pod_settings_are_passed_through() -> None:
    values = COMBINATIONS["everything"]
    objects = render(values)
    pod = the(objects, "Deployment")["spec"]["template"]
    for key in ("nodeSelector", "tolerations", "affinity", "priorityClassName", "imagePullSecrets"):
        assert pod["spec"][key] == values[key]
    assert pod["metadata"]["annotations"] == values["podAnnotations"]
    operator = container(objects)
    assert operator["image"] == f"{REPOSITORY}:0.1.1"
    assert operator["imagePullPolicy"] == "Always"
    assert {"name": "TZ", "value": "UTC"} in operator["env"]
    assert "--log-format=console" in operator["args"] and "--log-level=debug" in operator["args"]


def test_metrics_service_selects_the_operator_pod() -> None:
    objects = render()
    service = the(objects, "Service")
    pod_labels = the(objects, "Deployment")["spec"]["template"]["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert service["spec"]["ports"] == [
        {"name": "http-metrics", "port": 8080, "targetPort": "http-metrics", "protocol": "TCP"}
    ]


def test_service_monitor_and_pdb_select_the_operator() -> None:
    objects = render({**COMBINATIONS["serviceMonitor"], **COMBINATIONS["podDisruptionBudget"]})
    selector = the(objects, "Deployment")["spec"]["selector"]
    monitor = the(objects, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus"
    (endpoint,) = monitor["spec"]["endpoints"]
    # The rollout's `namespace` label must survive the scrape.
    assert endpoint["port"] == "http-metrics" and endpoint["honorLabels"] is True
    pdb = the(objects, "PodDisruptionBudget")
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": selector}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"rbac": {"scope": "everything"}}, "at '/rbac/scope': value must be one of 'cluster', 'namespaces'"),
        ({"image": {"tag": 5}}, "at '/image/tag': got number, want string"),
        ({"replica": 2}, "additional properties 'replica' not allowed"),
        ({"watchNamespaces": ["Team_A"]}, "at '/watchNamespaces/0'"),
        (
            {"rbac": {"prometheusSecrets": "prom-token"}},
            "at '/rbac/prometheusSecrets': got string, want array",
        ),
        ({"serviceMonitor": {"enabled": "yes"}}, "at '/serviceMonitor/enabled': got string, want boolean"),
        ({"replicas": 0}, "at '/replicas': minimum: got 0, want 1"),
        ({"peering": {"enabled": "yes"}}, "at '/peering/enabled': got string, want boolean"),
        ({"peering": {"lifetime": 5}}, "at '/peering/lifetime': minimum: got 5, want 10"),
        ({"peering": {"name": "Peers"}}, "at '/peering/name'"),
        ({"rolloutSelector": ["a"]}, "at '/rolloutSelector': got array, want string"),
    ],
)
def test_schema_rejects_wrong_values_naming_the_field(values: Object, message: str) -> None:
    error = render_error(values)
    assert "values don't meet the specifications of the schema" in error
    assert message in error


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"rbac": {"scope": "namespaces"}}, "list the namespaces to watch in watchNamespaces"),
        ({"watchNamespaces": ["team-a"]}, "set rbac.scope=namespaces to watch only those"),
        ({"serviceAccount": {"create": False}}, "serviceAccount.name is required"),
        (
            {"gateNetworkPolicy": {"enabled": True}},
            "gateNetworkPolicy.enabled needs gateNetworkPolicy.namespaces",
        ),
        ({"replicas": 2}, "replicas is 2 but peering.enabled is false"),
    ],
)
def test_contradictory_values_fail_with_a_clear_message(values: Object, message: str) -> None:
    assert message in render_error(values)


def test_kubernetes_older_than_the_floor_is_refused() -> None:
    assert "chart requires kubeVersion: >=1.30.0-0" in render_error({}, kube_version="1.29.9")


def test_token_addresses_reach_the_operator_as_its_allowlist() -> None:
    env = {e["name"]: e.get("value") for e in container(render(COMBINATIONS["tokenAddresses"]))["env"]}
    allowed = allowed_addresses(env[TOKEN_ADDRESSES_ENV])
    assert token_may_go("https://prometheus.monitoring:9090", allowed)
    assert token_may_go("https://mimir.example/prom/api", allowed)
    assert not token_may_go("https://evil.example", allowed)
    assert TOKEN_ADDRESSES_ENV not in {e["name"] for e in container(render())["env"]}


def test_the_gate_network_policy_limits_check_pods_and_never_allows_link_local() -> None:
    policies = of_kind(render(COMBINATIONS["gateNetworkPolicy"]), "NetworkPolicy")
    assert sorted(p["metadata"]["namespace"] for p in policies) == ["team-a", "team-b"]
    for policy in policies:
        spec = policy["spec"]
        assert spec["policyTypes"] == ["Egress"]
        assert spec["podSelector"] == {"matchExpressions": [{"key": CHECK_LABEL, "operator": "Exists"}]}
        egress = spec["egress"]
        assert {"protocol": "UDP", "port": 53} in egress[0]["ports"]
        assert {"to": [{"podSelector": {}}]} in egress
        assert {
            "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "judges"}}}]
        } in egress
        blocks = [peer["ipBlock"] for rule in egress for peer in rule.get("to", []) if "ipBlock" in peer]
        metadata = [
            ipaddress.ip_address(a) for a in ("169.254.169.254", "fe80::1", "fd00:ec2::254", "10.96.0.1")
        ]
        for address in metadata:
            covering = [b for b in blocks if address in ipaddress.ip_network(b["cidr"])]
            assert covering and all(
                any(address in ipaddress.ip_network(cidr) for cidr in b["except"]) for b in covering
            ), address
    assert of_kind(render(), "NetworkPolicy") == []


def test_without_other_addresses_the_gate_network_policy_allows_no_ip_block() -> None:
    values = {
        "gateNetworkPolicy": {"enabled": True},
        "rbac": {"scope": "namespaces"},
        "watchNamespaces": ["a"],
    }
    (policy,) = of_kind(render(values), "NetworkPolicy")
    assert policy["metadata"]["namespace"] == "a"
    assert not [peer for rule in policy["spec"]["egress"] for peer in rule.get("to", []) if "ipBlock" in peer]
