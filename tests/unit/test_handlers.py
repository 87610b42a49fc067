"""The kopf registrations: watch-event handlers only, which is what lets the operator skip kopf's
diff-base (a deep copy of every object on every event); and kopf's settings: its watches never give
up on an API server that stays away."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import kopf
from aiohttp import web
from aiohttp.test_utils import TestServer
from kopf._cogs.clients import api as kopf_api
from kopf._cogs.clients.auth import APIContext
from kopf._cogs.structs.credentials import ConnectionInfo

from modelgate import handlers


def test_only_watch_event_handlers_are_registered_so_no_diff_base_is_needed() -> None:
    registry = kopf.get_default_registry()
    watched = {handler.id for handler in registry._watching.get_all_handlers()}
    routes = {"route-httproutes", "route-grpcroutes", "route-virtualservices"}
    workloads = {"statefulset_event", "leaderworkerset_event"}
    assert {"rollout_event", "deployment_event", "pool_event", *workloads, *routes} <= watched
    # A change-detecting handler or a daemon would need kopf's diff-base: NoDiffBase must go then.
    assert not registry._changing.get_all_handlers()
    assert not registry._spawning.get_all_handlers()


def test_the_diff_base_keeps_nothing_of_the_object() -> None:
    body = kopf.Body({"metadata": {"name": "chat"}, "spec": {"steps": [{"setWeight": 10}]}})
    storage = handlers.NoDiffBase()
    assert storage.build(body=body) == {}
    assert storage.fetch(body=body) is None


UNAVAILABLE_ANSWERS = 12  # more than kopf's default 8 retries


async def _request_through_an_api_server_that_answers_503_first(settings: kopf.OperatorSettings) -> int:
    """kopf's own request routine (the one its watches use) against a server that answers 503, as a
    restarting kube-apiserver does, UNAVAILABLE_ANSWERS times; returns how many requests it got."""
    received = 0

    async def answer(_: web.Request) -> web.Response:
        nonlocal received
        received += 1
        if received <= UNAVAILABLE_ANSWERS:
            return web.json_response({"kind": "Status", "code": 503}, status=503)
        return web.json_response({"kind": "Status", "code": 200})

    app = web.Application()
    app.router.add_get("/api", answer)
    async with TestServer(app, host="127.0.0.1") as server:
        context = APIContext(ConnectionInfo(server=str(server.make_url(""))))
        try:
            response = await kopf_api.request(
                "get", "/api", settings=settings, context=context, logger=logging.getLogger("test")
            )
            response.close()
        finally:
            await context.close()
    return received


def test_kopf_retries_a_failing_request_without_end_so_no_watch_gives_up(monkeypatch: Any) -> None:
    # The delays made short; their number is what is tested.
    monkeypatch.setattr(handlers, "FIRST_RETRY", 0.001)
    monkeypatch.setattr(handlers, "MAX_RETRY", 0.002)
    settings = kopf.OperatorSettings()
    asyncio.run(
        handlers.configure(settings=settings, memo=kopf.Memo(executor=ThreadPoolExecutor(max_workers=1)))
    )
    received = asyncio.run(_request_through_an_api_server_that_answers_503_first(settings))
    assert received == UNAVAILABLE_ANSWERS + 1
