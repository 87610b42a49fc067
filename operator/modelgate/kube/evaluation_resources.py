"""What is written to a ModelEvaluation: its status (the reconciler), its run-now annotation (the CLI)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelgate import API_GROUP, API_VERSION, EVALUATION_PLURAL
from modelgate.kube.connection import FIELD_MANAGER, MERGE_PATCH, Connection, Object, api_request, as_object


class EvaluationResources(Connection):
    def patch_evaluation_status(self, namespace: str, name: str, status_body: Mapping[str, Any]) -> Object:
        """Merge-patches a ModelEvaluation's status subresource; returns the object as stored."""
        return self._merge_patch(namespace, name, {"status": dict(status_body)}, status=True)

    def patch_evaluation_annotations(
        self, namespace: str, name: str, annotations: Mapping[str, str | None]
    ) -> Object:
        """Sets a ModelEvaluation's annotations; a None value removes that annotation."""
        return self._merge_patch(namespace, name, {"metadata": {"annotations": dict(annotations)}})

    def _merge_patch(self, namespace: str, name: str, body: Object, *, status: bool = False) -> Object:
        patch = (
            self._custom.patch_namespaced_custom_object_status
            if status
            else self._custom.patch_namespaced_custom_object
        )
        with api_request("patch"):
            obj = as_object(
                patch(
                    API_GROUP,
                    API_VERSION,
                    namespace,
                    EVALUATION_PLURAL,
                    name,
                    body,
                    field_manager=FIELD_MANAGER,
                    _content_type=MERGE_PATCH,
                    _request_timeout=self.request_timeout,
                )
            )
        return self._remember(EVALUATION_PLURAL, obj)
