"""kopf registrations only: watch events feed the caches a tick reads and wake the per-object
loops; nothing is decided here."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import kopf
import structlog

from modelgate import API_GROUP, API_VERSION, EVALUATION_KIND, EVALUATION_PLURAL, KIND, PLURAL
from modelgate.api.policy_ref import PolicyKind
from modelgate.kube import Kube, KubeError
from modelgate.kube.checks import CHECK_LABEL
from modelgate.kube.pools import INFERENCE_GROUP, INFERENCE_POOLS, INFERENCE_VERSION
from modelgate.kube.workload_status import LWS_GROUP
from modelgate.modelevaluation.loops import EvaluationLoops
from modelgate.rollout_loops import RolloutLoops
from modelgate.routers.watched import route_resources

log = structlog.get_logger("modelgate.handlers")
# Set explicitly (kopf's advice): changing them later would make kopf treat every object as new.
ANNOTATION_PREFIX = "modelgate.io"
KOPF_FINALIZER = "modelgate.io/finalizer"
# kopf retries a failed request after these delays, in seconds.
FIRST_RETRY = 1.0
MAX_RETRY = 30.0


class NoDiffBase(kopf.DiffBaseStorage):
    """Keeps no diff-base. kopf builds one on every watch event, a deep copy of the whole object
    (status included) for its change-detecting handlers (on.create, on.update, ...); modelgate has
    only watch-event handlers, so the copy was pure cost: with 1,000 rollouts, a copy for each of
    the hundreds of events a second that their own status and route writes cause."""

    def build(self, *, body: kopf.Body, extra_fields: Any = None) -> kopf.BodyEssence:
        return kopf.BodyEssence()

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return None

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        pass


class EndlessRetries:
    """kopf's request delays, doubling up to MAX_RETRY, without end. kopf's default gives up after 8
    retries (about a minute), and a watch request that gives up ends its watch for good: kopf never
    starts it again, so the caches it feeds go stale while the operator runs on (an API server that
    takes that long to come back is enough). client-go's reflectors retry for as long; so does this.
    An iterable, not an iterator: kopf iterates it afresh for every request."""

    def __iter__(self) -> Iterator[float]:
        delay = FIRST_RETRY
        while True:
            yield delay
            delay = min(delay * 2, MAX_RETRY)


@kopf.on.startup()
async def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    # Ticks run in this pool (`modelgate run` makes it, and bounds the wait for it when stopping):
    # their waits on the API server and Prometheus overlap, bounded.
    executor: ThreadPoolExecutor = memo.executor
    asyncio.get_running_loop().set_default_executor(executor)
    # kopf puts this finalizer only on objects that a handler needing one matches (on.delete, daemons,
    # timers); modelgate registers none, so no rollout ever carries it. The one finalizer modelgate
    # sets, on rollouts with spec.rollback.onDelete ReturnTraffic only, is its own (core/actions.py).
    settings.persistence.finalizer = KOPF_FINALIZER
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=ANNOTATION_PREFIX)
    settings.persistence.diffbase_storage = NoDiffBase()
    # modelgate writes its own Events; kopf's would repeat every log line as one.
    settings.posting.enabled = False
    # No cluster-wide scans of CRDs and namespaces: kopf would need list/watch on both, which the
    # operator's own work does not. The cost: a ModelRollout CRD installed after the operator starts
    # needs a restart (Helm installs crds/ before the operator), and -n takes exact names.
    settings.scanning.disabled = True
    settings.networking.error_backoffs = EndlessRetries()
    settings.watching.server_timeout = 300
    settings.watching.client_timeout = 330


@kopf.on.startup()
async def resume_rollouts(memo: kopf.Memo, **_: Any) -> None:
    """After a restart, the rollouts whose step fell due while the operator was down tick at once (the
    longest overdue first), from one listing: kopf's own watch begins only after API discovery, its
    listing and its batching, about a second on a busy machine. Without the listing (an API server
    that does not answer), kopf's watch starts them."""
    listed: Callable[[], list[dict[str, Any]]] = memo.list_rollouts
    try:
        bodies = await asyncio.to_thread(listed)
    except KubeError as error:
        log.warning("cannot list the rollouts at startup; their watch will start them", error=error.message)
        return
    loops: RolloutLoops = memo.loops
    loops.resume(bodies)


@kopf.on.login()
def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
    """In a pod, the service account; elsewhere $KUBECONFIG, read when logging in (the kubernetes
    client library reads it once, at import, before `modelgate run --kubeconfig` could set it)."""
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.cleanup()
async def stop_loops(memo: kopf.Memo, **_: Any) -> None:
    loops: RolloutLoops = memo.loops
    await loops.stop()
    evaluations: EvaluationLoops = memo.evaluations
    await evaluations.stop()


def _cache(memo: kopf.Memo, plural: str, event_type: str | None, body: Mapping[str, Any]) -> None:
    kube: Kube = memo.kube
    cache = kube.caches[plural]
    if event_type == "DELETED":
        cache.delete(body["metadata"].get("namespace", ""), body["metadata"]["name"])
    else:
        cache.put(body)


@kopf.on.event(API_GROUP, API_VERSION, PLURAL)
async def rollout_event(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _cache(memo, PLURAL, type, body)
    loops: RolloutLoops = memo.loops
    loops.notice(type, body)


@kopf.on.event(API_GROUP, API_VERSION, EVALUATION_PLURAL)
async def evaluation_event(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _cache(memo, EVALUATION_PLURAL, type, body)
    evaluations: EvaluationLoops = memo.evaluations
    evaluations.notice(type, body)


def _policy_handler(kind: PolicyKind) -> Callable[..., Awaitable[None]]:
    async def policy_event(
        type: str, body: kopf.Body, namespace: str | None, name: str | None, memo: kopf.Memo, **_: Any
    ) -> None:
        # A cluster policy has no namespace: it wakes the rollouts naming it in every namespace.
        _cache(memo, kind.plural, type, body)
        loops: RolloutLoops = memo.loops
        if name:
            loops.notice_policy(kind.value, namespace, name)

    return policy_event


for _kind in PolicyKind:
    kopf.on.event(API_GROUP, API_VERSION, _kind.plural, id=f"policy-{_kind.plural}")(_policy_handler(_kind))


def _side_changed(memo: kopf.Memo, plural: str, event_type: str | None, body: Mapping[str, Any]) -> None:
    """A side's object changed: cached, and the rollouts whose candidate it names are woken."""
    _cache(memo, plural, event_type, body)
    loops: RolloutLoops = memo.loops
    meta = body["metadata"]
    if meta.get("namespace") and meta.get("name"):
        loops.notice_candidate(meta["namespace"], meta["name"])


@kopf.on.event("apps", "v1", "deployments")
async def deployment_event(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _side_changed(memo, "deployments", type, body)


@kopf.on.event(INFERENCE_GROUP, INFERENCE_VERSION, INFERENCE_POOLS)
async def pool_event(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    # Without the Inference Extension's CRD, kopf logs that it cannot serve this and watches the rest.
    _side_changed(memo, INFERENCE_POOLS, type, body)


@kopf.on.event("apps", "v1", "statefulsets")
async def statefulset_event(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    _side_changed(memo, "statefulsets", type, body)


@kopf.on.event(LWS_GROUP, "v1", "leaderworkersets")
async def leaderworkerset_event(type: str, body: kopf.Body, memo: kopf.Memo, **_: Any) -> None:
    # Without LeaderWorkerSet's CRD, kopf logs that it cannot serve this and watches the rest.
    _side_changed(memo, "leaderworkersets", type, body)


@kopf.on.event("batch", "v1", "jobs", labels={CHECK_LABEL: kopf.PRESENT})
async def check_job_event(body: kopf.Body, namespace: str | None, memo: kopf.Memo, **_: Any) -> None:
    """A gate check's Job changed (it ended, say): its rollout or evaluation (the Job's controller;
    the label may be a hashed cut of a long name) looks at once."""
    owners = body["metadata"].get("ownerReferences") or []
    owner: dict[str, Any] = next((o for o in owners if o.get("controller")), {})
    if not namespace or not owner.get("name"):
        return
    if owner.get("kind") == KIND:
        loops: RolloutLoops = memo.loops
        loops.wake_at_once(namespace, owner["name"])
    elif owner.get("kind") == EVALUATION_KIND:
        evaluations: EvaluationLoops = memo.evaluations
        evaluations.wake_at_once(namespace, owner["name"])


def _route_handler(plural: str) -> Callable[..., Awaitable[None]]:
    async def route_event(
        type: str, body: kopf.Body, namespace: str | None, name: str | None, memo: kopf.Memo, **_: Any
    ) -> None:
        _cache(memo, plural, type, body)
        loops: RolloutLoops = memo.loops
        if namespace and name:
            loops.notice_route(plural, namespace, name)

    return route_event


# Every kind a router reads. A kind whose CRD is not installed (Istio's, say) is not watched: kopf
# finds what to watch in the API server's discovery when it starts.
for _resource in route_resources():
    kopf.on.event(_resource.group, _resource.version, _resource.plural, id=f"route-{_resource.plural}")(
        _route_handler(_resource.plural)
    )
