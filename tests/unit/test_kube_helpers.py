"""The pure parts of modelgate.kube and the router registry: event text limits, how API errors are
translated, which router a spec picks, and the existence read that keeps its answer out of the caches."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from modelgate.api import GatewayAPIRouting, TrafficRouting
from modelgate.core.reasons import clip
from modelgate.kube import Conflict, Kube, KubeError, NamespaceTerminating, NotFound, PatchNotApplied
from modelgate.kube.api_errors import translated
from modelgate.routers import GatewayAPIRouter, UnknownRouterError, router_for

GATEWAY = GatewayAPIRouting(http_route="chat", incumbent_backend="chat-v1", candidate_backend="chat-v2")


def test_clip_keeps_short_text() -> None:
    assert clip("rolled back", 1024, utf8=True) == clip("rolled back", 1024) == "rolled back"


def test_clip_utf8_cuts_bytes_not_characters() -> None:
    cut = clip("é" * 600, 1024, utf8=True)  # 1200 bytes
    assert cut.endswith("...")
    assert len(cut.encode("utf-8")) <= 1024
    assert set(cut[:-3]) == {"é"}


def test_clip_counts_characters_by_default() -> None:
    cut = clip("é" * 600, 500)
    assert len(cut) == 500 and cut.endswith("...")


def status_body(code: int, message: str, causes: bool = False) -> str:
    details = {"causes": [{"field": "spec.x", "message": "bad"}]} if causes else {}
    return json.dumps({"kind": "Status", "code": code, "message": message, "details": details})


@pytest.mark.parametrize(
    ("code", "causes", "json_patch", "expected"),
    [
        (404, False, False, NotFound),
        (409, False, False, Conflict),
        (422, False, True, PatchNotApplied),  # what a failed `test` op returns
        (422, True, True, KubeError),  # the patched object broke the schema
        (422, False, False, KubeError),
        (403, False, False, KubeError),
    ],
)
def test_api_errors_become_our_exceptions(
    code: int, causes: bool, json_patch: bool, expected: type[KubeError]
) -> None:
    with pytest.raises(KubeError) as raised, translated(json_patch=json_patch):
        raise ApiException(
            status=code, reason="reason", body=status_body(code, "what the server said", causes)
        )
    assert type(raised.value) is expected
    assert (raised.value.status, raised.value.message) == (code, "what the server said")


def test_router_for_picks_the_router_the_spec_names() -> None:
    router = router_for(TrafficRouting(gateway_api=GATEWAY), Kube(client.ApiClient()), "serving")
    assert isinstance(router, GatewayAPIRouter)
    assert (router.obj.namespace, router.obj.kind, router.obj.name) == (
        "serving",
        "HTTPRoute",
        GATEWAY.http_route,
    )


class FutureRouting(TrafficRouting):
    """A spec with a router key that has no router registered."""

    future_mesh: GatewayAPIRouting | None = None


def test_router_for_rejects_an_unregistered_key() -> None:
    routing = FutureRouting(future_mesh=GATEWAY)
    with pytest.raises(UnknownRouterError, match=r"spec.trafficRouting.futureMesh; registered: gatewayAPI"):
        router_for(routing, Kube(client.ApiClient()), "serving")


def test_a_creation_refused_in_a_namespace_being_deleted_is_told_by_its_status_cause() -> None:
    cause = {"reason": "NamespaceTerminating", "field": "metadata.namespace", "message": "being deleted"}
    body = json.dumps({"kind": "Status", "code": 403, "message": "forbidden", "details": {"causes": [cause]}})
    with pytest.raises(NamespaceTerminating), translated():
        raise ApiException(status=403, reason="Forbidden", body=body)


class AnsweringObjects:
    """CustomObjectsApi's namespaced get, answering with `status` (200: an object)."""

    def __init__(self, status: int) -> None:
        self.status = status

    def get_namespaced_custom_object(self, *_: object, **__: object) -> dict[str, object]:
        if self.status != 200:
            raise ApiException(status=self.status, reason="refused")
        return {"metadata": {"name": "chat-adapters", "namespace": "serving", "resourceVersion": "1"}}


@pytest.mark.parametrize(("status", "exists"), [(200, True), (404, False), (403, False)])
def test_an_existence_read_counts_a_refused_read_as_absent_and_caches_nothing(
    status: int, exists: bool
) -> None:
    kube = Kube(client.ApiClient())
    caches = kube.watch_caches(["inferencemodelrewrites"])
    kube._custom = AnsweringObjects(status)  # type: ignore[assignment]
    asked = (
        "inference.networking.x-k8s.io",
        "v1alpha2",
        "serving",
        "inferencemodelrewrites",
        "chat-adapters",
    )
    assert kube.custom_exists(*asked) is exists
    assert caches["inferencemodelrewrites"].get("serving", "chat-adapters") is None


def test_an_existence_read_the_api_server_cannot_answer_is_raised() -> None:
    kube = Kube(client.ApiClient())
    kube._custom = AnsweringObjects(503)  # type: ignore[assignment]
    with pytest.raises(KubeError):
        kube.custom_exists("llm-d.ai", "v1alpha2", "serving", "inferencemodelrewrites", "chat-adapters")
