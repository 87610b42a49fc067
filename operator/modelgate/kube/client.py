"""The only caller of the `kubernetes` client: typed, synchronous, plain dicts in and out.

The operator calls these methods from worker threads. Every failure surfaces as a `KubeError`
(`NotFound`, `Conflict`, `PatchNotApplied`), never as the client's ApiException, so callers can tell
"the object is not there" from "the API server cannot be asked right now".
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import socket
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from modelgate import API_GROUP, API_VERSION, PLURAL
from modelgate.kube.api_errors import Conflict, KubeError, NotFound, PatchNotApplied, translated
from modelgate.kube.cache import ObjectCache, deployment_essentials
from modelgate.kube.checks import JOB_NAME_LABEL
from modelgate.kube.objects import DeploymentAvailability, availability, event_body
from modelgate.kube.pools import (
    INFERENCE_GROUP,
    INFERENCE_POOLS,
    INFERENCE_VERSION,
    PoolPod,
    pool_availability,
    pool_label_selector,
    pool_pod,
)
from modelgate.observability import API_REQUEST_SECONDS, API_REQUESTS

FIELD_MANAGER = "modelgate"
DEFAULT_REQUEST_TIMEOUT = 30.0

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"

Object = dict[str, Any]


@dataclass(frozen=True)
class SecretKeyValue:
    text: str
    annotations: Mapping[str, str]


class Kube:
    def __init__(
        self,
        api_client: client.ApiClient,
        *,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        reporting_host: str | None = None,
    ) -> None:
        """Reads go to the API server until `watch_caches` is called (the operator does: its watches
        keep the caches current; the CLI does not)."""
        self.api_client = api_client
        self.caches: dict[str, ObjectCache] = {}
        # Without a timeout a hung connection would block a worker thread forever.
        self.request_timeout = request_timeout
        self.reporting_host = reporting_host or socket.gethostname()
        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._apps = client.AppsV1Api(api_client)
        self._batch = client.BatchV1Api(api_client)

    def watch_caches(self, route_plurals: Iterable[str]) -> dict[str, ObjectCache]:
        """Turns on the caches of the kinds a tick reads, by plural (the routers' objects are
        `route_plurals`); the caller feeds them from watches of the same scope. A Deployment is
        cached as its essentials only."""
        self.caches = {
            PLURAL: ObjectCache(),
            **{plural: ObjectCache() for plural in route_plurals},
            "deployments": ObjectCache(deployment_essentials),
            INFERENCE_POOLS: ObjectCache(),
        }
        return self.caches

    def _remember(self, plural: str, obj: Object) -> Object:
        cache = self.caches.get(plural)
        if cache is not None:
            cache.put(obj)
        return obj

    @classmethod
    def from_kubeconfig(
        cls,
        path: str | Path | None = None,
        *,
        connections: int | None = None,
        reporting_host: str | None = None,
    ) -> Kube:
        """The kubeconfig at `path`; with None, the in-cluster service account when running in a
        pod, else the default kubeconfig ($KUBECONFIG or ~/.kube/config). `connections`: how many
        connections to keep open, at least the number of threads that use this client at once (more
        threads than connections open and close one per request)."""
        configuration = client.Configuration()
        if connections is not None:
            configuration.connection_pool_maxsize = connections
        if path is not None:
            _load_kubeconfig(path, configuration)
            return cls(client.ApiClient(configuration), reporting_host=reporting_host)
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except ConfigException:
            _load_kubeconfig(None, configuration)
        return cls(client.ApiClient(configuration), reporting_host=reporting_host)

    # -- custom resources ------------------------------------------------------------------------
    def get_custom(
        self, group: str, version: str, namespace: str, plural: str, name: str, *, fresh: bool = False
    ) -> Object:
        """The cached copy when there is one (never mutate it), else, or with `fresh`, the API
        server's."""
        cache = None if fresh else self.caches.get(plural)
        held = None if cache is None else cache.get(namespace, name)
        if held is not None:
            return held
        with _request("get"):
            obj = _as_object(
                self._custom.get_namespaced_custom_object(
                    group, version, namespace, plural, name, _request_timeout=self.request_timeout
                )
            )
        return self._remember(plural, obj)

    def get_cluster_custom(self, group: str, version: str, plural: str, name: str) -> Object:
        with _request("get"):
            return _as_object(
                self._custom.get_cluster_custom_object(
                    group, version, plural, name, _request_timeout=self.request_timeout
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
        with _request("list"):
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
        with _request("list"):
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
        with _request("patch", json_patch=True):
            obj = _as_object(
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
        with _request("patch"):
            obj = _as_object(
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
        with _request("patch"):
            obj = _as_object(
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

    # -- built-in resources ----------------------------------------------------------------------
    def side_ready_replicas(self, namespace: str, kind: str, name: str) -> int:
        """A side's Ready replicas: a Deployment's status.readyReplicas, an InferencePool's Ready
        selected Pods; 0 when it does not exist."""
        if kind != "Deployment":
            return sum(pod.ready for pod in self.pool_pods(namespace, name) or [])
        deployment = self._deployment(namespace, name)
        return 0 if deployment is None else int((deployment.get("status") or {}).get("readyReplicas") or 0)

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
        deployment = self._deployment(namespace, name)
        if deployment is None:
            return DeploymentAvailability(exists=False, available=False, message=f"{what} not found")
        return availability(what, deployment)

    def _deployment(self, namespace: str, name: str) -> Object | None:
        """The cached Deployment (its essentials), else the API server's; None when it does not exist."""
        cache = self.caches.get("deployments")
        deployment = None if cache is None else cache.get(namespace, name)
        if deployment is not None:
            return deployment
        try:
            with _request("get"):
                # The JSON as sent: the typed model's deserialization costs more than the read.
                response: Any = self._apps.read_namespaced_deployment(
                    name, namespace, _preload_content=False, _request_timeout=self.request_timeout
                )
        except NotFound:
            return None
        return self._remember("deployments", _as_object(json.loads(response.data)))

    def scale_deployment(self, namespace: str, name: str, replicas: int) -> None:
        """Sets the Deployment's replicas through its scale subresource (`patch` on deployments/scale,
        the only write the operator makes to a Deployment)."""
        with _request("patch"):
            self._apps.patch_namespaced_deployment_scale(
                name, namespace, {"spec": {"replicas": replicas}}, _request_timeout=self.request_timeout
            )

    def deployment_pods(self, namespace: str, name: str) -> list[str]:
        """The names of the Deployment's Pods (by its selector), but for those being deleted; none when
        it does not exist."""
        deployment = self._deployment(namespace, name)
        labels = ((deployment or {}).get("spec") or {}).get("selector", {}).get("matchLabels") or {}
        if not labels:
            return []
        with _request("list"):
            response: Any = self._core.list_namespaced_pod(
                namespace,
                label_selector=",".join(f"{key}={value}" for key, value in sorted(labels.items())),
                _preload_content=False,
                _request_timeout=self.request_timeout,
            )
        items = _as_object(json.loads(response.data)).get("items") or []
        return sorted(pod.name for pod in map(pool_pod, items) if pod is not None)

    def pool_pods(self, namespace: str, name: str) -> list[PoolPod] | None:
        """The Pods an InferencePool selects (by its spec.selector, in its namespace), but for those
        being deleted; None when the pool does not exist. The pool comes from the watch cache; the
        Pods are listed, by the selector, at each call."""
        try:
            pool = self.get_custom(INFERENCE_GROUP, INFERENCE_VERSION, namespace, INFERENCE_POOLS, name)
        except NotFound:
            return None
        with _request("list"):
            # The JSON as sent: the typed model's deserialization costs more than the read.
            response: Any = self._core.list_namespaced_pod(
                namespace,
                label_selector=pool_label_selector(pool),
                _preload_content=False,
                _request_timeout=self.request_timeout,
            )
        items = _as_object(json.loads(response.data)).get("items") or []
        return [pod for pod in map(pool_pod, items) if pod is not None]

    def pool_availability(self, namespace: str, name: str, field: str) -> DeploymentAvailability:
        """Whether the InferencePool can take traffic: it selects at least one Pod and all of them are
        Ready. The message names the pool and `field`, the spec field that names it, then "<ready> of
        <selected> selected Pods Ready"."""
        what = f"InferencePool {namespace}/{name} ({field})"
        return pool_availability(what, self.pool_pods(namespace, name))

    @property
    def server_url(self) -> str:
        """The API server's URL, as this client reaches it."""
        return str(self.api_client.configuration.host)

    def read_secret_key(self, namespace: str, name: str, key: str) -> SecretKeyValue:
        """The UTF-8 text stored under `key` in a Secret's data, and the Secret's annotations."""
        what = f"Secret {namespace}/{name}"
        try:
            with _request("get"):
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

    # -- the gate's check Jobs -----------------------------------------------------------------------
    def check_job_and_pods(self, namespace: str, name: str) -> tuple[Object | None, list[Object]]:
        """A check's Job (None when it does not exist) and its Pods, fresh from the API server."""
        try:
            with _request("get"):
                response: Any = self._batch.read_namespaced_job(
                    name, namespace, _preload_content=False, _request_timeout=self.request_timeout
                )
        except NotFound:
            return None, []
        job = _as_object(json.loads(response.data))
        with _request("list"):
            listed: Any = self._core.list_namespaced_pod(
                namespace,
                label_selector=f"{JOB_NAME_LABEL}={name}",
                _preload_content=False,
                _request_timeout=self.request_timeout,
            )
        return job, list(_as_object(json.loads(listed.data)).get("items") or [])

    def create_job(self, job: Mapping[str, Any]) -> None:
        """Creates a Job; one that already exists (created by an earlier tick) is left as it is."""
        try:
            with _request("create"):
                body: Any = dict(job)  # the client sends a dict as it is
                response: Any = self._batch.create_namespaced_job(
                    job["metadata"]["namespace"],
                    body,
                    field_manager=FIELD_MANAGER,
                    _preload_content=False,
                    _request_timeout=self.request_timeout,
                )
                response.data  # noqa: B018 - reads the body, so the connection goes back to the pool
        except Conflict:
            pass

    def delete_job(self, namespace: str, name: str) -> None:
        """Deletes a Job and its Pods (in the background); one already gone is fine."""
        try:
            with _request("delete"):
                self._batch.delete_namespaced_job(
                    name,
                    namespace,
                    propagation_policy="Background",
                    _preload_content=False,
                    _request_timeout=self.request_timeout,
                )
        except NotFound:
            pass

    def config_map_keys(self, namespace: str, name: str) -> set[str] | None:
        """The keys of a ConfigMap's data and binaryData; None when it does not exist."""
        try:
            with _request("get"):
                config_map = self._core.read_namespaced_config_map(
                    name, namespace, _request_timeout=self.request_timeout
                )
        except NotFound:
            return None
        return set(config_map.data or {}) | set(config_map.binary_data or {})

    def service_port(self, namespace: str, name: str) -> int | None:
        """The first port of a Service; None when it does not exist."""
        try:
            with _request("get"):
                service = self._core.read_namespaced_service(
                    name, namespace, _request_timeout=self.request_timeout
                )
        except NotFound:
            return None
        ports = (service.spec.ports if service.spec else None) or []
        return int(ports[0].port) if ports else None

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
        the machine-readable thing being done."""
        # As client-go's event recorder does: the component, then the host (the operator's pod).
        instance = f"{component}-{self.reporting_host}"
        body = event_body(involved, type_, reason, message, action=action, instance=instance)
        # Through the generic endpoint: the typed EventsV1Api would serialize eventTime with
        # datetime.isoformat(), which drops the microseconds the MicroTime format requires when they
        # happen to be zero.
        # The Event as stored is not needed: its response is read, not parsed.
        with _request("create"):
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


def _as_object(value: Any) -> Object:
    if not isinstance(value, dict):
        raise KubeError(None, f"expected a JSON object from the API server, got {type(value).__name__}")
    return value


def _load_kubeconfig(path: str | Path | None, configuration: client.Configuration) -> None:
    """The kubeconfig at `path` (None: $KUBECONFIG, else ~/.kube/config), or a KubeError saying which
    one could not be read."""
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=None if path is None else str(path), client_configuration=configuration
        )
    except (ConfigException, OSError, ValueError) as error:
        where = path or os.environ.get("KUBECONFIG") or "~/.kube/config"
        raise KubeError(None, f"cannot read the kubeconfig {where}: {error}") from None


def default_namespace(kubeconfig: str | Path | None = None) -> str:
    """The namespace of the kubeconfig's current context, as kubectl would use it."""
    try:
        _, context = config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig) if kubeconfig else None
        )
    except (config.ConfigException, TypeError, KeyError):
        return "default"
    return str(context.get("context", {}).get("namespace") or "default")


@contextmanager
def _request(verb: str, *, json_patch: bool = False) -> Iterator[None]:
    """One request to the API server: counted (the operator's own request rate), errors translated."""
    API_REQUESTS.labels(verb).inc()
    with API_REQUEST_SECONDS.labels(verb).time(), translated(json_patch=json_patch):
        yield
