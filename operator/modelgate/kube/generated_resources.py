"""The Deployments and Services a one-edit rollout generates: read whole, created, patched, deleted."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from modelgate.kube.api_errors import NotFound
from modelgate.kube.connection import FIELD_MANAGER, JSON_PATCH, Connection, Object, api_request, as_object

APPS = "deployments"
SERVICES = "services"


class GeneratedResources(Connection):
    def read_whole(self, kind: str, namespace: str, name: str) -> Object | None:
        """A Deployment (`deployments`) or Service (`services`) as the API server has it, pod template
        and all (the cache keeps a Deployment's essentials only); None when it does not exist."""
        read = self._reader(kind)
        try:
            with api_request("get"):
                response: Any = read(
                    name, namespace, _preload_content=False, _request_timeout=self.request_timeout
                )
        except NotFound:
            return None
        return as_object(json.loads(response.data))

    def create_generated(self, kind: str, body: Mapping[str, Any]) -> bool:
        """Creates it; False when it exists already (made by an earlier tick)."""
        create = (
            self._apps.create_namespaced_deployment if kind == APPS else self._core.create_namespaced_service
        )
        return self.create_unless_there(create, body)

    def json_patch_generated(self, kind: str, namespace: str, name: str, operations: list[Object]) -> None:
        """Applies an RFC 6902 JSON patch to a Deployment or Service."""
        patch = (
            self._apps.patch_namespaced_deployment if kind == APPS else self._core.patch_namespaced_service
        )
        with api_request("patch", json_patch=True):
            response: Any = patch(
                name,
                namespace,
                operations,
                field_manager=FIELD_MANAGER,
                _content_type=JSON_PATCH,
                _preload_content=False,
                _request_timeout=self.request_timeout,
            )
            response.data  # noqa: B018

    def delete_generated(self, kind: str, namespace: str, name: str) -> bool:
        """Deletes it (its Pods in the background); False when it was gone already."""
        delete = (
            self._apps.delete_namespaced_deployment if kind == APPS else self._core.delete_namespaced_service
        )
        return self.delete_if_there(delete, namespace, name)

    def generated_deployments(self, namespace: str, label_selector: str) -> list[str]:
        """The names of the Deployments the selector selects."""
        items = self.list_selected(self._apps.list_namespaced_deployment, namespace, label_selector)
        return sorted(str(item["metadata"]["name"]) for item in items)

    def _reader(self, kind: str) -> Callable[..., Any]:
        return self._apps.read_namespaced_deployment if kind == APPS else self._core.read_namespaced_service
