"""A ModelRollout manifest that tells receivers of the test's own, their URLs in a Secret of its
namespace (the only place the operator reads a rollout's receiver URLs from)."""

from __future__ import annotations

from collections.abc import Mapping

from kubernetes import client

from testbed.manifests import Manifest

URL_SECRET = "hooks"


def notifying(
    api_client: client.ApiClient, manifest: Manifest, receivers: Mapping[str, tuple[str, str]]
) -> Manifest:
    """`manifest` telling each receiver, by name: (its kind, its URL), the URLs in Secret `hooks`."""
    namespace = manifest["metadata"]["namespace"]
    urls = {name: url for name, (_, url) in receivers.items()}
    secret = client.V1Secret(metadata=client.V1ObjectMeta(name=URL_SECRET), string_data=urls)
    client.CoreV1Api(api_client).create_namespaced_secret(namespace, secret)
    manifest["spec"]["notifications"] = {
        "receivers": [
            {"name": name, "kind": kind, "urlSecretRef": {"name": URL_SECRET, "key": name}}
            for name, (kind, _) in receivers.items()
        ]
    }
    return manifest
