"""The connection to the API server that every part of the client shares.

The connection to the API server that every part of the client shares: the kubernetes client's
APIs, the request timeout, the watch caches, and how one request is counted and its errors
translated."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import structlog
from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from modelgate import EVALUATION_PLURAL, PLURAL
from modelgate.api.policy_ref import CLUSTER_POLICY_PLURAL, POLICY_PLURAL
from modelgate.kube.api_errors import Conflict, KubeconfigMissing, KubeError, NotFound, translated
from modelgate.kube.cache import ObjectCache, deployment_essentials
from modelgate.kube.pools import INFERENCE_POOLS
from modelgate.kube.request_rate import RequestRate
from modelgate.observability import API_REQUEST_SECONDS, API_REQUESTS, API_THROTTLED_SECONDS

FIELD_MANAGER = "modelgate"
DEFAULT_REQUEST_TIMEOUT = 30.0

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"

Object = dict[str, Any]


class Connection:
    """The kubernetes client's APIs, the request timeout and the caches, shared by Kube's parts."""

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
            EVALUATION_PLURAL: ObjectCache(),
            **{plural: ObjectCache() for plural in route_plurals},
            "deployments": ObjectCache(deployment_essentials),
            # A workload side's status is all its availability needs, as a Deployment's is.
            "statefulsets": ObjectCache(deployment_essentials),
            "leaderworkersets": ObjectCache(deployment_essentials),
            INFERENCE_POOLS: ObjectCache(),
            POLICY_PLURAL: ObjectCache(),
            CLUSTER_POLICY_PLURAL: ObjectCache(),
        }
        return self.caches

    def _remember(self, plural: str, obj: Object) -> Object:
        cache = self.caches.get(plural)
        if cache is not None:
            cache.put(obj)
        return obj

    def create_unless_there(self, create: Callable[..., Any], body: Mapping[str, Any]) -> bool:
        """Creates `body` with the client's `create_namespaced_*`; False when it exists already (an
        earlier tick made it)."""
        try:
            with api_request("create"):
                sent: Any = dict(body)  # the client sends a dict as it is
                response: Any = create(
                    body["metadata"]["namespace"],
                    sent,
                    field_manager=FIELD_MANAGER,
                    _preload_content=False,
                    _request_timeout=self.request_timeout,
                )
                response.data  # noqa: B018 - reads the body, so the connection goes back to the pool
        except Conflict:
            return False
        return True

    def delete_if_there(self, delete: Callable[..., Any], namespace: str, name: str) -> bool:
        """Deletes the object with the client's `delete_namespaced_*` (what it owns in the
        background); False when it was gone already."""
        try:
            with api_request("delete"):
                delete(
                    name,
                    namespace,
                    propagation_policy="Background",
                    _preload_content=False,
                    _request_timeout=self.request_timeout,
                )
        except NotFound:
            return False
        return True

    def list_selected(
        self, list_objects: Callable[..., Any], namespace: str, label_selector: str
    ) -> list[Object]:
        """The objects the client's `list_namespaced_*` finds by the selector."""
        with api_request("list"):
            # The JSON as sent: the typed model's deserialization costs more than the read.
            response: Any = list_objects(
                namespace,
                label_selector=label_selector,
                _preload_content=False,
                _request_timeout=self.request_timeout,
            )
        return list(as_object(json.loads(response.data)).get("items") or [])

    def get_custom(
        self, group: str, version: str, namespace: str, plural: str, name: str, *, fresh: bool = False
    ) -> Object:
        """The cached copy when there is one (never mutate it), else, or with `fresh`, the API
        server's."""
        cache = None if fresh else self.caches.get(plural)
        held = None if cache is None else cache.get(namespace, name)
        if held is not None:
            return held
        with api_request("get"):
            obj = as_object(
                self._custom.get_namespaced_custom_object(
                    group, version, namespace, plural, name, _request_timeout=self.request_timeout
                )
            )
        return self._remember(plural, obj)

    @classmethod
    def from_kubeconfig(
        cls,
        path: str | Path | None = None,
        *,
        connections: int | None = None,
        reporting_host: str | None = None,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        retries: int | None = None,
        default_kubeconfig: str | None = None,
    ) -> Self:
        """The kubeconfig at `path`; with None, the in-cluster service account when running in a
        pod, else the default kubeconfig (`default_kubeconfig`, $KUBECONFIG as the CLI read it, or
        ~/.kube/config). `connections`: how many
        connections to keep open, at least the number of threads that use this client at once (more
        threads than connections open and close one per request)."""
        configuration = client.Configuration()
        configuration.retries = retries  # None: urllib3's own (3); 0 where an answer is wanted soon
        if connections is not None:
            configuration.connection_pool_maxsize = connections
        if path is not None:
            _load_kubeconfig(path, None, configuration)
            return cls(
                client.ApiClient(configuration),
                reporting_host=reporting_host,
                request_timeout=request_timeout,
            )
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except ConfigException:
            _load_kubeconfig(None, default_kubeconfig, configuration)
        return cls(
            client.ApiClient(configuration), reporting_host=reporting_host, request_timeout=request_timeout
        )

    @property
    def server_url(self) -> str:
        """The API server's URL, as this client reaches it."""
        return str(self.api_client.configuration.host)


def as_object(value: Any) -> Object:
    if not isinstance(value, dict):
        raise KubeError(None, f"expected a JSON object from the API server, got {type(value).__name__}")
    return value


def _load_kubeconfig(
    path: str | Path | None, default: str | None, configuration: client.Configuration
) -> None:
    """The kubeconfig at `path` (None: `default`, $KUBECONFIG as the CLI read it, else ~/.kube/config),
    or a KubeError saying which one could not be read."""
    where = str(path or default or "~/.kube/config")
    if os.pathsep not in where and not Path(where).expanduser().exists():
        raise KubeconfigMissing(where)
    try:
        config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=None if path is None else str(path), client_configuration=configuration
        )
    except (ConfigException, OSError, ValueError) as error:
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


class _Limit:
    """The process's request rate limit: one for all its connections, as they share one API server."""

    rate: RequestRate | None = None


def limit_requests(rate: RequestRate | None) -> None:
    """Holds every later request to `rate` (None: no limit); `modelgate run` sets it once."""
    _Limit.rate = rate


@contextmanager
def api_request(verb: str, *, json_patch: bool = False) -> Iterator[None]:
    """One request to the API server: held to the rate limit, counted (the operator's own request
    rate), errors translated."""
    if _Limit.rate is not None:
        API_THROTTLED_SECONDS.observe(_Limit.rate.take())
    # The reconcilers bind the namespace they work for to the log context; the count follows it.
    namespace = structlog.contextvars.get_contextvars().get("namespace", "")
    API_REQUESTS.labels(verb, namespace).inc()
    with API_REQUEST_SECONDS.labels(verb).time(), translated(json_patch=json_patch):
        yield
