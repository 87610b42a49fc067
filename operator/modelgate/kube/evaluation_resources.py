"""What is written to a ModelEvaluation: its status (the reconciler), its run-now annotation (the CLI)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from modelgate import API_GROUP, API_VERSION, EVALUATION_PLURAL
from modelgate.kube.connection import FIELD_MANAGER, MERGE_PATCH, Connection, Object, api_request, as_object


class EvaluationResources(Connection):
    def patch_evaluation_status(self, namespace: str, name: str, status_body: Mapping[str, Any]) -> Object:
        """Merge-patches a ModelEvaluation's status subresource; returns the object as stored."""
        with api_request("patch"):
            obj = as_object(
                self._custom.patch_namespaced_custom_object_status(
                    API_GROUP,
                    API_VERSION,
                    namespace,
                    EVALUATION_PLURAL,
                    name,
                    {"status": dict(status_body)},
                    field_manager=FIELD_MANAGER,
                    _content_type=MERGE_PATCH,
                    _request_timeout=self.request_timeout,
                )
            )
        return self._remember(EVALUATION_PLURAL, obj)

    def patch_evaluation_annotations(
        self, namespace: str, name: str, annotations: Mapping[str, str | None]
    ) -> Object:
        """Sets a ModelEvaluation's annotations; a None value removes that annotation."""
        with api_request("patch"):
            return as_object(
                self._custom.patch_namespaced_custom_object(
                    API_GROUP,
                    API_VERSION,
                    namespace,
                    EVALUATION_PLURAL,
                    name,
                    {"metadata": {"annotations": dict(annotations)}},
                    field_manager=FIELD_MANAGER,
                    _content_type=MERGE_PATCH,
                    _request_timeout=self.request_timeout,
                )
            )
