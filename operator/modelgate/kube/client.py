"""`Kube`, the only caller of the `kubernetes` client: typed, synchronous, plain dicts.

The only caller of the `kubernetes` client, with the modules its `Kube` is built from
(`connection`, `workloads`, `gate_resources`): typed, synchronous, plain dicts in and out.

The operator calls these methods from worker threads. Every failure surfaces as a `KubeError`
(`NotFound`, `Conflict`, `PatchNotApplied`), never as the client's ApiException, so callers can tell
"the object is not there" from "the API server cannot be asked right now".
"""

from __future__ import annotations

import base64
import binascii
import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.kube.api_errors import Conflict, KubeError, NamespaceTerminating, NotFound, PatchNotApplied
from modelgate.kube.connection import (
    FIELD_MANAGER,
    JSON_PATCH,
    MERGE_PATCH,
    Object,
    api_request,
    as_object,
)
from modelgate.kube.evaluation_resources import EvaluationResources
from modelgate.kube.gate_resources import GateResources
from modelgate.kube.generated_resources import GeneratedResources
from modelgate.kube.group_members import GroupMembers
from modelgate.kube.objects import event_body


@dataclass(frozen=True)
class SecretKeyValue:
    text: str
    annotations: Mapping[str, str]


class Kube(GroupMembers, GateResources, EvaluationResources, GeneratedResources):
    """Every call the operator and its CLI make to the API server."""

    # -- custom resources ------------------------------------------------------------------------
    def get_cluster_custom(self, group: str, version: str, plural: str, name: str) -> Object:
        """The cached copy when there is one (never mutate it), else the API server's."""
        cache = self.caches.get(plural)
        held = None if cache is None else cache.get("", name)
        if held is not None:
            return held
        with api_request("get"):
            obj = as_object(
                self._custom.get_cluster_custom_object(
                    group, version, plural, name, _request_timeout=self.request_timeout
                )
            )
        return self._remember(plural, obj)

    def custom_exists(self, group: str, version: str, namespace: str, plural: str, name: str) -> bool:
        """Whether the object exists, asked of the API server and kept out of the caches (they are
        by plural: another group's kind of the same plural must not enter them). A read this
        account is not granted (403), or of a kind not installed, counts as absent."""
        try:
            with api_request("get"):
                self._custom.get_namespaced_custom_object(
                    group, version, namespace, plural, name, _request_timeout=self.request_timeout
                )
        except NotFound:
            return False
        except KubeError as error:
            if error.status == HTTPStatus.FORBIDDEN:
                return False
            raise
        return True

    def list_custom(
        self,
        group: str,
        version: str,
        namespace: str | None,
        plural: str,
        label_selector: str | None = None,
    ) -> list[Object]:
        """The items in `namespace`, or in all namespaces when it is None."""
        with api_request("list"):
            if namespace is None:
                listed = self._custom.list_cluster_custom_object(
                    group,
                    version,
                    plural,
                    label_selector=label_selector,
                    _request_timeout=self.request_timeout,
                )
            else:
                listed = self._custom.list_namespaced_custom_object(
                    group,
                    version,
                    namespace,
                    plural,
                    label_selector=label_selector,
                    _request_timeout=self.request_timeout,
                )
        return [as_object(item) for item in as_object(listed).get("items", [])]

    def namespace_names(self) -> list[str]:
        """The namespaces the user may list (for completion)."""
        with api_request("list"):
            listed = self._core.list_namespace(_request_timeout=self.request_timeout)
        return [str(item.metadata.name) for item in listed.items if item.metadata is not None]

    def list_events(self, namespace: str, kind: str, name: str) -> list[Object]:
        """events.k8s.io Events about one object, oldest first (the API server keeps them for an
        hour by default, its --event-ttl)."""
        selector = f"regarding.kind={kind},regarding.name={name}"
        with api_request("list"):
            listed = self._custom.list_namespaced_custom_object(
                "events.k8s.io",
                "v1",
                namespace,
                "events",
                field_selector=selector,
                _request_timeout=self.request_timeout,
            )
        items = [as_object(item) for item in as_object(listed).get("items", [])]
        return sorted(items, key=lambda e: str(e.get("eventTime") or e.get("deprecatedLastTimestamp") or ""))

    def json_patch_custom(
        self,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        name: str,
        operations: list[Object],
        field_manager: str = FIELD_MANAGER,
    ) -> Object:
        """Applies an RFC 6902 JSON patch and returns the object as stored afterwards."""
        with api_request("patch", json_patch=True):
            obj = as_object(
                self._custom.patch_namespaced_custom_object(
                    group,
                    version,
                    namespace,
                    plural,
                    name,
                    operations,
                    field_manager=field_manager,
                    _content_type=JSON_PATCH,
                    _request_timeout=self.request_timeout,
                )
            )
        return self._remember(plural, obj)

    # -- ModelRollouts ---------------------------------------------------------------------------
    def patch_status(self, namespace: str, name: str, status_body: Mapping[str, Any]) -> Object:
        """Merge-patches a ModelRollout's status subresource with `status_body` (the value of
        `.status`); keys set to None are removed. Returns the whole object as stored."""
        with api_request("patch"):
            obj = as_object(
                self._custom.patch_namespaced_custom_object_status(
                    API_GROUP,
                    API_VERSION,
                    namespace,
                    PLURAL,
                    name,
                    {"status": dict(status_body)},
                    field_manager=FIELD_MANAGER,
                    _content_type=MERGE_PATCH,
                    _request_timeout=self.request_timeout,
                )
            )
        return self._remember(PLURAL, obj)

    def patch_annotations(self, namespace: str, name: str, annotations: Mapping[str, str | None]) -> Object:
        """Sets a ModelRollout's annotations; a None value removes that annotation."""
        with api_request("patch"):
            obj = as_object(
                self._custom.patch_namespaced_custom_object(
                    API_GROUP,
                    API_VERSION,
                    namespace,
                    PLURAL,
                    name,
                    {"metadata": {"annotations": dict(annotations)}},
                    field_manager=FIELD_MANAGER,
                    _content_type=MERGE_PATCH,
                    _request_timeout=self.request_timeout,
                )
            )
        return self._remember(PLURAL, obj)

    def set_finalizer(self, namespace: str, name: str, finalizer: str, present: bool) -> bool:
        """Adds or removes one finalizer of a ModelRollout, keeping any others, against the newest copy
        known (a JSON patch that tests its resourceVersion). False when the rollout changed under it."""
        meta = self.get_custom(API_GROUP, API_VERSION, namespace, PLURAL, name)["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        if (finalizer in finalizers) == present:
            return True
        wanted = [*finalizers, finalizer] if present else [f for f in finalizers if f != finalizer]
        operations: list[Object] = [
            {"op": "test", "path": "/metadata/resourceVersion", "value": meta["resourceVersion"]},
            {"op": "add", "path": "/metadata/finalizers", "value": wanted},
        ]
        try:
            self.json_patch_custom(API_GROUP, API_VERSION, namespace, PLURAL, name, operations)
        except (PatchNotApplied, Conflict):
            return False
        return True

    def read_secret_key(self, namespace: str, name: str, key: str) -> SecretKeyValue:
        """The UTF-8 text stored under `key` in a Secret's data, and the Secret's annotations."""
        what = f"Secret {namespace}/{name}"
        try:
            with api_request("get"):
                secret = self._core.read_namespaced_secret(
                    name, namespace, _request_timeout=self.request_timeout
                )
        except NotFound as missing:
            raise NotFound(missing.status, f"{what} not found") from None
        data: dict[str, str | bytes] = secret.data or {}
        if key not in data:
            keys = ", ".join(sorted(data)) or "none"
            raise NotFound(None, f"{what} has no key {key!r} (it has: {keys})")
        try:
            # Values arrive as the API's base64 text (the model also allows it as ASCII bytes).
            text = base64.b64decode(data[key], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as error:
            raise KubeError(None, f"key {key!r} of {what} is not UTF-8 text: {error}") from None
        annotations = secret.metadata.annotations if secret.metadata is not None else None
        return SecretKeyValue(text, dict(annotations or {}))

    def create_event(
        self,
        involved: Mapping[str, Any],
        type_: str,
        reason: str,
        message: str,
        component: str = "modelgate",
        action: str = "Reconcile",
    ) -> None:
        """Records an events.k8s.io/v1 Event about `involved`. The API server stores these as the same
        resource as core/v1 Events, so `kubectl describe` and `kubectl events` show them. `action` is
        the machine-readable thing being done. In a namespace being deleted no Event can be stored,
        and none is needed: `involved` goes with its namespace; the caller's work goes on."""
        # As client-go's event recorder does: the component, then the host (the operator's pod).
        instance = f"{component}-{self.reporting_host}"
        body = event_body(involved, type_, reason, message, action=action, instance=instance)
        # Through the generic endpoint: the typed EventsV1Api would serialize eventTime with
        # datetime.isoformat(), which drops the microseconds the MicroTime format requires when they
        # happen to be zero.
        # The Event as stored is not needed: its response is read, not parsed.
        with contextlib.suppress(NamespaceTerminating), api_request("create"):
            response: Any = self._custom.create_namespaced_custom_object(
                "events.k8s.io",
                "v1",
                involved["metadata"]["namespace"],
                "events",
                body,
                field_manager=FIELD_MANAGER,
                _preload_content=False,
                _request_timeout=self.request_timeout,
            )
            response.data  # noqa: B018 - reads the body, so the connection goes back to the pool
