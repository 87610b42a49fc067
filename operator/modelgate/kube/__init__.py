"""The only caller of the `kubernetes` client, its errors, and pure helpers over its objects.

The only caller of the `kubernetes` client (`client.py` and the modules its `Kube` is built
from), its errors, and pure helpers over the objects it reads and writes."""

from modelgate.kube.api_errors import (
    Conflict,
    KubeconfigMissing,
    KubeError,
    NamespaceTerminating,
    NotFound,
    ObjectGone,
    PatchNotApplied,
)
from modelgate.kube.client import Kube
from modelgate.kube.connection import FIELD_MANAGER, Object, default_namespace
from modelgate.kube.objects import DeploymentAvailability

__all__ = [
    "FIELD_MANAGER",
    "Conflict",
    "DeploymentAvailability",
    "Kube",
    "KubeError",
    "KubeconfigMissing",
    "NamespaceTerminating",
    "NotFound",
    "Object",
    "ObjectGone",
    "PatchNotApplied",
    "default_namespace",
]
