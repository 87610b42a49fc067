"""Kubeconfig files for the bed's components and its admin user."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from testbed.pki import CertPair


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def write_kubeconfig(
    path: Path,
    *,
    server: str,
    ca_cert: Path,
    user: str,
    client: CertPair | None = None,
    token: str | None = None,
) -> Path:
    """Writes a self-contained kubeconfig (certificates embedded) for a client cert or a bearer token."""
    credentials: dict[str, str] = {}
    if client is not None:
        credentials["client-certificate-data"] = _b64(client.cert)
        credentials["client-key-data"] = _b64(client.key)
    if token is not None:
        credentials["token"] = token
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "modelgate-local",
                "cluster": {"server": server, "certificate-authority-data": _b64(ca_cert)},
            }
        ],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": user, "context": {"cluster": "modelgate-local", "user": user}}],
        "current-context": user,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
