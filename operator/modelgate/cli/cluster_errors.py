"""A request the cluster did not answer, or a file that cannot be read, as one sentence for the user
(no traceback), with what to do."""

from __future__ import annotations

from modelgate import API_GROUP, PLURAL
from modelgate.kube import KubeconfigMissing, KubeError

UNAUTHORIZED = 401
FORBIDDEN = 403


def explain(error: KubeError) -> str:
    if isinstance(error, KubeconfigMissing):
        return f"there is no kubeconfig at {error.path}; name one with --kubeconfig or $KUBECONFIG."
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


def file_problem(error: OSError) -> str:
    """An input file that cannot be read, in one sentence naming it (not Python's errno text)."""
    name = error.filename
    if name is None:
        return str(error)
    if isinstance(error, FileNotFoundError):
        return f"there is no file {name}."
    if isinstance(error, IsADirectoryError):
        return f"{name} is a directory, not a file."
    if isinstance(error, PermissionError):
        return f"{name} cannot be read: permission denied."
    return f"{name} cannot be read: {error.strerror or error}."
