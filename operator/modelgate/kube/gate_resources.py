"""What the gate's check Jobs need from the API server: the Jobs and their Pods, and the
ConfigMaps and Services they are checked against."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from modelgate.kube.api_errors import NotFound
from modelgate.kube.checks import JOB_NAME_LABEL
from modelgate.kube.connection import (
    Connection,
    Object,
    api_request,
    as_object,
)


class GateResources(Connection):
    # -- the gate's check Jobs -----------------------------------------------------------------------
    def check_job_and_pods(self, namespace: str, name: str) -> tuple[Object | None, list[Object]]:
        """A check's Job (None when it does not exist) and its Pods, fresh from the API server."""
        try:
            with api_request("get"):
                response: Any = self._batch.read_namespaced_job(
                    name, namespace, _preload_content=False, _request_timeout=self.request_timeout
                )
        except NotFound:
            return None, []
        job = as_object(json.loads(response.data))
        with api_request("list"):
            listed: Any = self._core.list_namespaced_pod(
                namespace,
                label_selector=f"{JOB_NAME_LABEL}={name}",
                _preload_content=False,
                _request_timeout=self.request_timeout,
            )
        return job, list(as_object(json.loads(listed.data)).get("items") or [])

    def create_job(self, job: Mapping[str, Any]) -> None:
        """Creates a Job; one that already exists (created by an earlier tick) is left as it is."""
        self.create_unless_there(self._batch.create_namespaced_job, job)

    def delete_job(self, namespace: str, name: str) -> None:
        """Deletes a Job and its Pods (in the background); one already gone is fine."""
        self.delete_if_there(self._batch.delete_namespaced_job, namespace, name)

    def config_map_keys(self, namespace: str, name: str) -> set[str] | None:
        """The keys of a ConfigMap's data and binaryData; None when it does not exist."""
        try:
            with api_request("get"):
                config_map = self._core.read_namespaced_config_map(
                    name, namespace, _request_timeout=self.request_timeout
                )
        except NotFound:
            return None
        return set(config_map.data or {}) | set(config_map.binary_data or {})

    def service_port(self, namespace: str, name: str) -> int | None:
        """The first port of a Service; None when it does not exist."""
        try:
            with api_request("get"):
                service = self._core.read_namespaced_service(
                    name, namespace, _request_timeout=self.request_timeout
                )
        except NotFound:
            return None
        ports = (service.spec.ports if service.spec else None) or []
        return int(ports[0].port) if ports else None
