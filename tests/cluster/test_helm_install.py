"""`helm install` of charts/modelgate into the bed: the API server accepts every object (the same
validation as `kubectl apply --dry-run=server`, extra volumes, a probe of another handler and extra
objects included) and the Deployment is created as rendered. The pods do not really run: kwok fakes
them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from modelgate import API_GROUP, API_VERSION
from modelgate.api.policy_ref import CLUSTER_POLICY_PLURAL
from testbed.localcluster import LocalCluster
from tests.support.helm import BED_REPOSITORY, helm, installed_chart

PROMETHEUS = "http://prometheus.monitoring:9090"


def test_chart_installs_and_creates_the_operator_deployment(
    local_bed: LocalCluster, api_client: client.ApiClient, namespace: str
) -> None:
    policy = f"vllm-gateway-{namespace}"
    values = {
        "rbac": {"prometheusSecrets": ["prom-token"]},
        "grafanaDashboard": {"enabled": True},
        "podDisruptionBudget": {"enabled": True},
        "deploymentAnnotations": {"example.com/owner": "ml-platform"},
        "extraVolumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "1Mi"}}],
        "extraVolumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
        "livenessProbe": {"httpGet": None, "tcpSocket": {"port": "health"}},
        "extraObjects": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "{{ .Release.Name }}-extra"}}
        ],
        "rolloutPolicies": {"defaultPolicy": {"create": True, "name": policy, "prometheus": PROMETHEUS}},
    }
    with (
        shipped_policy_deleted(api_client, policy),
        installed_chart(local_bed.kubeconfig, namespace, values) as release,
    ):
        status = json.loads(helm(local_bed.kubeconfig, "status", release.name, "-n", namespace, "-o", "json"))
        assert status["info"]["status"] == "deployed"

        deployment = client.AppsV1Api(api_client).read_namespaced_deployment(release.fullname, namespace)
        assert deployment.spec.replicas == 1
        assert deployment.spec.strategy.type == "Recreate"
        pod = deployment.spec.template.spec
        assert pod.service_account_name == release.fullname
        (container,) = pod.containers
        assert container.image == f"{BED_REPOSITORY}:0.1.0"
        assert container.command == ["modelgate"]
        assert container.args[:2] == ["run", "--all-namespaces"]
        assert container.security_context.read_only_root_filesystem is True
        assert container.liveness_probe.tcp_socket.port == "health"
        assert container.readiness_probe.http_get.path == "/healthz"
        assert deployment.metadata.annotations["example.com/owner"] == "ml-platform"
        assert [m.mount_path for m in container.volume_mounts] == ["/tmp", "/scratch"]

        core = client.CoreV1Api(api_client)
        core.read_namespaced_service_account(release.fullname, namespace)
        service = core.read_namespaced_service(f"{release.fullname}-metrics", namespace)
        assert [(p.name, p.port) for p in service.spec.ports] == [("http-metrics", 8080)]
        dashboard = core.read_namespaced_config_map(f"{release.fullname}-dashboard", namespace)
        assert dashboard.metadata.labels["grafana_dashboard"] == "1"
        client.PolicyV1Api(api_client).read_namespaced_pod_disruption_budget(release.fullname, namespace)
        core.read_namespaced_config_map(f"{release.name}-extra", namespace)

        rbac = client.RbacAuthorizationV1Api(api_client)
        binding = rbac.read_cluster_role_binding(release.fullname)
        assert [(s.kind, s.name, s.namespace) for s in binding.subjects] == [
            ("ServiceAccount", release.fullname, namespace)
        ]
        assert rbac.read_cluster_role(release.fullname).rules

        # The shipped policy, created by its hook once the CRD serves: the API server took its spec.
        objects = client.CustomObjectsApi(api_client)
        shipped = objects.get_cluster_custom_object(API_GROUP, API_VERSION, CLUSTER_POLICY_PLURAL, policy)
        assert shipped["spec"]["analysis"]["prometheus"]["address"] == PROMETHEUS


@contextmanager
def shipped_policy_deleted(api_client: client.ApiClient, name: str) -> Iterator[None]:
    """The chart keeps its ClusterModelRolloutPolicy on uninstall (cluster-scoped): the test deletes it."""
    try:
        yield
    finally:
        try:
            client.CustomObjectsApi(api_client).delete_cluster_custom_object(
                API_GROUP, API_VERSION, CLUSTER_POLICY_PLURAL, name
            )
        except ApiException as error:
            if error.status != 404:
                raise
