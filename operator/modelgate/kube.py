"""The only module that calls the `kubernetes` client: typed, synchronous, plain dicts in and out.

The operator calls these methods from worker threads. Every failure surfaces as a `KubeError`
(`NotFound`, `Conflict`, `PatchNotApplied`), never as the client's ApiException, so callers can tell
"the object is not there" from "the API server cannot be asked right now".
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
import socket
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

API_GROUP = "modelgate.io"
API_VERSION = "v1alpha1"
MODELROLLOUTS = "modelrollouts"

FIELD_MANAGER = "modelgate"
REPORTING_CONTROLLER = "modelgate.io/operator"
DEFAULT_REQUEST_TIMEOUT = 30.0

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"

# events.k8s.io/v1 validation limits, in bytes (the API server measures Go string lengths).
EVENT_NOTE_LIMIT = 1024
EVENT_REASON_LIMIT = 128
EVENT_ACTION_LIMIT = 128
EVENT_INSTANCE_LIMIT = 128

Object = dict[str, Any]


class KubeError(Exception):
    """A request failed. `status` is the HTTP status, or None when no response arrived."""

    def __init__(self, status: int | None, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class NotFound(KubeError):
    """The object (or the key asked for inside it) does not exist."""


class Conflict(KubeError):
    """The object changed under the caller: HTTP 409 (a stale resourceVersion, or it already
    exists), or status None from a read-modify-write that kept losing the race to other writers."""


class PatchNotApplied(KubeError):
    """422 from a JSON patch that could not be applied: a `test` op did not hold, or an op's path
    does not exist. The API server answers both with the same generic 422 (reason Invalid, message
    "the server rejected our request due to an error in our request", no causes); it drops the
    patch library's own error text. A 422 *with* causes is a schema violation, a plain KubeError."""


@dataclass(frozen=True)
class DeploymentAvailability:
    exists: bool
    available: bool
    message: str


class Kube:
    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        reporting_host: str | None = None,
    ) -> None:
        self.api_client = api_client
        # Without a timeout a hung connection would block a worker thread forever.
        self.request_timeout = request_timeout
        self.reporting_host = reporting_host or socket.gethostname()
        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._apps = client.AppsV1Api(api_client)

    @classmethod
    def from_kubeconfig(cls, path: str | Path | None = None) -> Kube:
        """The kubeconfig at `path`; with None, the in-cluster service account when running in a
        pod, else the default kubeconfig ($KUBECONFIG or ~/.kube/config)."""
        if path is not None:
            return cls(config.new_client_from_config(config_file=str(path)))  # type: ignore[no-untyped-call]
        configuration = client.Configuration()
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except ConfigException:
            return cls(config.new_client_from_config())  # type: ignore[no-untyped-call]
        return cls(client.ApiClient(configuration))

    # -- custom resources ------------------------------------------------------------------------
    def get_custom(self, group: str, version: str, namespace: str, plural: str, name: str) -> Object:
        with _translated():
            return _as_object(
                self._custom.get_namespaced_custom_object(
                    group, version, namespace, plural, name, _request_timeout=self.request_timeout
                )
            )

    def list_custom(
        self,
        group: str,
        version: str,
        namespace: str | None,
        plural: str,
        label_selector: str | None = None,
    ) -> list[Object]:
        """The items in `namespace`, or in all namespaces when it is None."""
        with _translated():
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
        return [_as_object(item) for item in _as_object(listed).get("items", [])]

    def list_events(self, namespace: str, kind: str, name: str) -> list[Object]:
        """events.k8s.io Events about one object, oldest first (the API server keeps them for an
        hour by default, its --event-ttl)."""
        selector = f"regarding.kind={kind},regarding.name={name}"
        with _translated():
            listed = self._custom.list_namespaced_custom_object(
                "events.k8s.io",
                "v1",
                namespace,
                "events",
                field_selector=selector,
                _request_timeout=self.request_timeout,
            )
        items = [_as_object(item) for item in _as_object(listed).get("items", [])]
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
        with _translated(json_patch=True):
            return _as_object(
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

    # -- ModelRollouts ---------------------------------------------------------------------------
    def patch_status(self, namespace: str, name: str, status_body: Mapping[str, Any]) -> Object:
        """Merge-patches a ModelRollout's status subresource with `status_body` (the value of
        `.status`); keys set to None are removed. Returns the whole object as stored."""
        with _translated():
            return _as_object(
                self._custom.patch_namespaced_custom_object_status(
                    API_GROUP,
                    API_VERSION,
                    namespace,
                    MODELROLLOUTS,
                    name,
                    {"status": dict(status_body)},
                    field_manager=FIELD_MANAGER,
                    _content_type=MERGE_PATCH,
                    _request_timeout=self.request_timeout,
                )
            )

    def patch_annotations(self, namespace: str, name: str, annotations: Mapping[str, str | None]) -> Object:
        """Sets a ModelRollout's annotations; a None value removes that annotation."""
        with _translated():
            return _as_object(
                self._custom.patch_namespaced_custom_object(
                    API_GROUP,
                    API_VERSION,
                    namespace,
                    MODELROLLOUTS,
                    name,
                    {"metadata": {"annotations": dict(annotations)}},
                    field_manager=FIELD_MANAGER,
                    _content_type=MERGE_PATCH,
                    _request_timeout=self.request_timeout,
                )
            )

    # -- built-in resources ----------------------------------------------------------------------
    def deployment_availability(self, namespace: str, name: str) -> DeploymentAvailability:
        """Whether the Deployment can take traffic now: its own rollout is complete and available,
        the test `kubectl rollout status` and Flagger apply. All of:

        - status.observedGeneration >= metadata.generation: the status describes the current spec;
        - its `Available` condition is True;
        - updatedReplicas >= spec.replicas >= 1: every wanted replica runs the current template
          (zero replicas can serve nothing, though `Available` is True for them);
        - status.replicas == updatedReplicas: no pod of an older template is left, which would
          keep `Available` True while the new template cannot even be scheduled;
        - availableReplicas >= updatedReplicas: the new pods are Ready, not merely created.

        The message names the first of these that is missing, then "<available> of <spec.replicas>
        replicas available".
        """
        what = f"Deployment {namespace}/{name}"
        try:
            with _translated():
                deployment = self._apps.read_namespaced_deployment(
                    name, namespace, _request_timeout=self.request_timeout
                )
        except NotFound:
            return DeploymentAvailability(exists=False, available=False, message=f"{what} not found")
        return _availability(what, deployment)

    def read_secret_key(self, namespace: str, name: str, key: str) -> str:
        """The UTF-8 text stored under `key` in a Secret's data."""
        what = f"Secret {namespace}/{name}"
        try:
            with _translated():
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
            return base64.b64decode(data[key], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as error:
            raise KubeError(None, f"key {key!r} of {what} is not UTF-8 text: {error}") from None

    def create_event(
        self,
        involved: Mapping[str, Any],
        type_: str,
        reason: str,
        message: str,
        component: str = "modelgate",
        action: str = "Reconcile",
    ) -> Object:
        """Records an events.k8s.io/v1 Event about `involved` (an object with apiVersion, kind and
        metadata) in its namespace. The API server stores these as the same resource as core/v1
        Events, so `kubectl describe` and `kubectl events` show them. Over-long texts are cut to the
        API's limits rather than rejected. `action` is the machine-readable thing being done."""
        metadata = involved["metadata"]
        namespace = metadata["namespace"]
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": _event_name(metadata["name"]), "namespace": namespace},
            "eventTime": _micro_time(datetime.now(UTC)),
            "type": type_,
            "reason": truncate_utf8(reason, EVENT_REASON_LIMIT),
            "note": truncate_utf8(message, EVENT_NOTE_LIMIT),
            "action": truncate_utf8(action, EVENT_ACTION_LIMIT),
            "reportingController": REPORTING_CONTROLLER,
            # As client-go's event recorder does: the component, then the host (the operator's pod).
            "reportingInstance": truncate_utf8(f"{component}-{self.reporting_host}", EVENT_INSTANCE_LIMIT),
            "regarding": {
                "apiVersion": involved["apiVersion"],
                "kind": involved["kind"],
                "namespace": namespace,
                "name": metadata["name"],
                "uid": metadata.get("uid"),
            },
        }
        # Through the generic endpoint: the typed EventsV1Api would serialize eventTime with
        # datetime.isoformat(), which drops the microseconds the MicroTime format requires when they
        # happen to be zero.
        with _translated():
            return _as_object(
                self._custom.create_namespaced_custom_object(
                    "events.k8s.io",
                    "v1",
                    namespace,
                    "events",
                    body,
                    field_manager=FIELD_MANAGER,
                    _request_timeout=self.request_timeout,
                )
            )


def truncate_utf8(text: str, limit: int, marker: str = "...") -> str:
    """`text` cut to at most `limit` UTF-8 bytes, ending with `marker` when cut, never mid-character."""
    encoded = text.encode("utf-8")
    if len(encoded) <= limit:
        return text
    room = limit - len(marker.encode("utf-8"))
    return encoded[:room].decode("utf-8", errors="ignore") + marker


def _event_name(regarding: str) -> str:
    """`<regarding>.<hex time><random>`, as client-go names Events; the random part keeps two
    operator replicas apart. (generateName is no help: events.k8s.io/v1 validates the prefix itself as
    a DNS subdomain, and "name." is not one.)"""
    suffix = f".{time.time_ns():x}{secrets.token_hex(2)}"
    base = regarding[: 253 - len(suffix)].rstrip("-.")
    return base + suffix


def _micro_time(moment: datetime) -> str:
    # metav1.MicroTime: RFC 3339 with exactly six fractional digits.
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _availability(what: str, deployment: Any) -> DeploymentAvailability:
    generation = deployment.metadata.generation or 0
    status = deployment.status
    observed = status.observed_generation or 0
    wanted = deployment.spec.replicas if deployment.spec.replicas is not None else 1
    total = status.replicas or 0
    updated = status.updated_replicas or 0
    ready = status.available_replicas or 0
    replicas = f"{ready} of {wanted} replicas available"
    condition = next((c for c in status.conditions or [] if c.type == "Available"), None)

    if observed < generation:
        missing = f"the controller has not yet observed generation {generation} (observed {observed})"
    elif condition is None:
        missing = "it has no Available condition yet"
    elif condition.status != "True":
        missing = f"it is not Available ({condition.reason}: {condition.message})"
    elif wanted < 1:
        missing = "it is scaled to zero replicas"
    elif updated < wanted:
        missing = f"{updated} of {wanted} replicas run the current template"
    elif total > updated:
        missing = f"{total - updated} replica(s) of an older template are still there"
    elif ready < updated:
        missing = f"{updated - ready} replica(s) of the current template are not available yet"
    else:
        return DeploymentAvailability(exists=True, available=True, message=f"{what}: {replicas}")
    return DeploymentAvailability(exists=True, available=False, message=f"{what}: {missing}; {replicas}")


def _as_object(value: Any) -> Object:
    if not isinstance(value, dict):
        raise KubeError(None, f"expected a JSON object from the API server, got {type(value).__name__}")
    return value


@contextmanager
def _translated(*, json_patch: bool = False) -> Iterator[None]:
    """Turns the client's exceptions into ours."""
    try:
        yield
    except ApiException as error:
        _raise_translated(error, json_patch=json_patch)
    except urllib3.exceptions.HTTPError as error:  # connection refused, timeouts, TLS failures
        raise KubeError(None, f"cannot reach the Kubernetes API server: {error}") from None


def _raise_translated(error: ApiException, *, json_patch: bool) -> NoReturn:
    status: dict[str, Any] = {}
    try:
        parsed = json.loads(error.body or "")
        if isinstance(parsed, dict):
            status = parsed
    except ValueError:
        pass
    message = str(status.get("message") or error.reason or "no message")
    code = error.status
    if code == 404:
        raise NotFound(code, message) from None
    if code == 409:
        raise Conflict(code, message) from None
    if code == 422 and json_patch and not (status.get("details") or {}).get("causes"):
        raise PatchNotApplied(code, message) from None
    raise KubeError(code, message) from None


def default_namespace(kubeconfig: str | Path | None = None) -> str:
    """The namespace of the kubeconfig's current context, as kubectl would use it."""
    try:
        _, context = config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig) if kubeconfig else None
        )
    except (config.ConfigException, TypeError, KeyError):
        return "default"
    return str(context.get("context", {}).get("namespace") or "default")
