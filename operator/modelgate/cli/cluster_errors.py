"""A request the cluster did not answer, as one line for the user (no traceback), with what to do."""

from __future__ import annotations

from modelgate import API_GROUP, PLURAL
from modelgate.kube import KubeError

UNAUTHORIZED = 401
FORBIDDEN = 403


def explain(error: KubeError) -> str:
    if error.status == FORBIDDEN:
        return (
            f"the API server refused: {error.message} (ask for RBAC rights on {PLURAL}.{API_GROUP} "
            "in the namespace: get, list, watch, patch; and get on events)"
        )
    if error.status == UNAUTHORIZED:
        return f"the API server did not accept the kubeconfig's credentials: {error.message}"
    if error.status is None:
        return f"{error.message} (check --kubeconfig, $KUBECONFIG or ~/.kube/config, and its context)"
    return f"the API server answered {error.status}: {error.message}"
