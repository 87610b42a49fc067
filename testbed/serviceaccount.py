"""A kubeconfig that acts as a ServiceAccount, with a token from the TokenRequest API: the identity
an in-cluster operator would have, for a process running outside the cluster."""

from __future__ import annotations

from pathlib import Path

from kubernetes import client

from testbed.kubeconfig import write_kubeconfig
from testbed.localcluster import LocalCluster

TOKEN_LIFETIME_SECONDS = 3600


def service_account_username(namespace: str, name: str) -> str:
    """The user name the API server gives the ServiceAccount (what `kubectl --as` takes)."""
    return f"system:serviceaccount:{namespace}:{name}"


def request_token(
    api_client: client.ApiClient, namespace: str, name: str, lifetime: int = TOKEN_LIFETIME_SECONDS
) -> str:
    """A bound token for the ServiceAccount, for the API server's own audience (empty audiences)."""
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=lifetime)
    )
    answer = client.CoreV1Api(api_client).create_namespaced_service_account_token(name, namespace, request)
    if answer.status is None or not answer.status.token:
        raise RuntimeError(f"the API server issued no token for ServiceAccount {namespace}/{name}")
    return str(answer.status.token)


def service_account_kubeconfig(
    bed: LocalCluster, api_client: client.ApiClient, namespace: str, name: str, path: Path
) -> Path:
    """Writes a kubeconfig for the bed's API server that authenticates as the ServiceAccount."""
    return write_kubeconfig(
        path,
        server=bed.api_server_url,
        ca_cert=bed.layout.pki / "ca.crt",
        user=service_account_username(namespace, name),
        token=request_token(api_client, namespace, name),
    )
