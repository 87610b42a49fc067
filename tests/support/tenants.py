"""A tenant for the admission tests: a ServiceAccount given only the Roles a test grants it, and its
creates and updates as dry runs, which admission answers as it would a real write."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from modelgate import API_GROUP, API_VERSION, EVALUATION_KIND, EVALUATION_PLURAL, PLURAL
from testbed.localcluster import LocalCluster
from testbed.manifests import Manifest
from testbed.serviceaccount import service_account_kubeconfig, service_account_username

TENANT = "tenant"


def grant(api_client: client.ApiClient, namespace: str, name: str, rules: list[dict[str, Any]]) -> None:
    """A Role with `rules` bound to the tenant's ServiceAccount."""
    rbac = client.RbacAuthorizationV1Api(api_client)
    rbac.create_namespaced_role(namespace, {"metadata": {"name": name}, "rules": rules})
    subject = {"kind": "ServiceAccount", "name": TENANT, "namespace": namespace}
    role = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}
    rbac.create_namespaced_role_binding(
        namespace, {"metadata": {"name": name}, "roleRef": role, "subjects": [subject]}
    )


def secret_readers(names: list[str]) -> dict[str, Any]:
    """The rule that lets its holder `get` these Secrets and no other."""
    return {"apiGroups": [""], "resources": ["secrets"], "resourceNames": names, "verbs": ["get"]}


@dataclass(frozen=True)
class Tenant:
    objects: client.CustomObjectsApi
    namespace: str

    @property
    def username(self) -> str:
        return service_account_username(self.namespace, TENANT)

    def refusal(self, manifest: Manifest) -> ApiException | None:
        """Why the tenant's (dry-run) create is refused; None when admitted."""
        try:
            self.objects.create_namespaced_custom_object(
                API_GROUP, API_VERSION, self.namespace, _plural(manifest), manifest, dry_run="All"
            )
        except ApiException as error:
            return error
        return None

    def update_refusal(self, manifest: Manifest, spec: dict[str, Any]) -> ApiException | None:
        """Why the tenant's (dry-run) merge patch of `spec` on the object is refused; None when admitted."""
        name = manifest["metadata"]["name"]
        try:
            self.objects.patch_namespaced_custom_object(
                API_GROUP, API_VERSION, self.namespace, _plural(manifest), name, {"spec": spec}, dry_run="All"
            )
        except ApiException as error:
            return error
        return None


def tenant(bed: LocalCluster, api_client: client.ApiClient, namespace: str, workdir: Path) -> Tenant:
    """The tenant's ServiceAccount in `namespace`, with no rights until `grant` gives some."""
    client.CoreV1Api(api_client).create_namespaced_service_account(namespace, {"metadata": {"name": TENANT}})
    kubeconfig = service_account_kubeconfig(bed, api_client, namespace, TENANT, workdir / TENANT)
    return Tenant(
        client.CustomObjectsApi(config.new_client_from_config(config_file=str(kubeconfig))), namespace
    )


def _plural(manifest: Manifest) -> str:
    return EVALUATION_PLURAL if manifest["kind"] == EVALUATION_KIND else PLURAL
