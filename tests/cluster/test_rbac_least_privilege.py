"""The chart's RBAC is enough and no more: the operator, run as the chart's ServiceAccount (a
TokenRequest token, out of the cluster), completes a rollout with no permission error; and
SubjectAccessReviews (what `kubectl auth can-i --as` asks) show that the ServiceAccount can do what
the operator needs and nothing else, in both scopes."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from kubernetes import client

from modelgate.api import Phase
from modelgate.api.addresses import ALLOWED_ADDRESSES_ANNOTATION
from modelgate.core.actions import FINALIZER
from modelgate.routers.watched import route_resources
from testbed.localcluster import LocalCluster
from testbed.manifests import SEED_METRICS, model_rollout
from testbed.model_server_double import Behaviour
from testbed.operator_process import OperatorProcess
from testbed.serviceaccount import service_account_kubeconfig, service_account_username
from testbed.waiting import wait_for
from tests.support.apiserver_metrics import apiserver_sum
from tests.support.cli import modelgate
from tests.support.helm import installed_chart
from tests.support.operators import admin_operator_stopped, running
from tests.support.scenario import serving

PROMETHEUS_SECRET = "prom-token"
OTHER_SECRET = "other-token"
# A 403 that is not about RBAC: writes into a namespace being deleted (left over by earlier tests).
NAMESPACE_TERMINATING = "because it is being terminated"
PERMISSION_ERROR = re.compile(r"forbidden|(?<![.\d])403(?![.\d])|not enough permissions", re.IGNORECASE)


class Check(NamedTuple):
    """A question for `kubectl auth can-i`: `resource` (`plural.group`, or `plural` in the core group)
    may be `resource/name`."""

    verb: str
    resource: str
    subresource: str = ""


ROLLOUTS = "modelrollouts.modelgate.io"
EVALUATIONS = "modelevaluations.modelgate.io"
POLICIES = "modelrolloutpolicies.modelgate.io"
CLUSTER_POLICIES = "clustermodelrolloutpolicies.modelgate.io"
WRITES = ("create", "update", "patch", "delete")
# Every kind a registered router reads and patches (each router's record, modelgate.routers).
ROUTER_KINDS = tuple(f"{resource.plural}.{resource.group}" for resource in route_resources())
DEPLOYMENTS = "deployments.apps"
POOLS = "inferencepools.inference.networking.k8s.io"
CRDS = "customresourcedefinitions.apiextensions.k8s.io"
CLUSTER_PEERINGS = "clusterkopfpeerings.kopf.dev"
PEERINGS = "kopfpeerings.kopf.dev"

# What the operator does in a namespace it watches (see operator/modelgate/kube/ and handlers.py).
NEEDED: list[Check] = [
    *(Check(verb, ROLLOUTS) for verb in ("get", "list", "watch", "patch")),
    Check("patch", ROLLOUTS, "status"),
    *(Check(verb, EVALUATIONS) for verb in ("get", "list", "watch")),
    Check("patch", EVALUATIONS, "status"),
    *(Check(verb, POLICIES) for verb in ("get", "list", "watch")),
    *(Check(verb, DEPLOYMENTS) for verb in ("get", "list", "watch")),
    *(Check(verb, kind) for kind in ROUTER_KINDS for verb in ("get", "list", "watch", "patch")),
    *(Check(verb, POOLS) for verb in ("get", "list", "watch")),
    Check("list", "pods"),
    *(Check(verb, "jobs.batch") for verb in ("get", "list", "watch", "create", "delete")),
    Check("get", "configmaps"),
    Check("get", "services"),
    Check("create", "events.events.k8s.io"),
    Check("get", f"secrets/{PROMETHEUS_SECRET}"),
]
NEVER_IN_A_NAMESPACE: list[Check] = [
    Check("get", f"secrets/{OTHER_SECRET}"),
    *(Check(verb, "secrets") for verb in ("get", "list", "watch", "create")),
    Check("patch", f"secrets/{PROMETHEUS_SECRET}"),
    *(Check(verb, ROLLOUTS) for verb in ("create", "update", "delete", "deletecollection")),
    Check("update", ROLLOUTS, "status"),
    *(Check(verb, EVALUATIONS) for verb in ("create", "update", "patch", "delete")),
    *(Check(verb, POLICIES) for verb in WRITES),
    *(Check(verb, DEPLOYMENTS) for verb in ("create", "update", "patch", "delete")),
    Check("patch", DEPLOYMENTS, "scale"),
    *(Check(verb, kind) for kind in ROUTER_KINDS for verb in ("create", "update", "delete")),
    Check("patch", "gateways.gateway.networking.k8s.io"),
    Check("patch", "destinationrules.networking.istio.io"),
    Check("create", "events"),  # core/v1: kopf's own event posting is off
    *(Check(verb, POOLS) for verb in ("create", "update", "patch", "delete")),
    *(Check(verb, "pods") for verb in ("create", "get", "watch", "patch", "delete")),
    Check("create", "pods", "exec"),
    Check("patch", "services"),
    *(Check(verb, "jobs.batch") for verb in ("update", "patch")),
    Check("patch", "configmaps"),
    Check("create", "serviceaccounts", "token"),
    Check("create", "rolebindings.rbac.authorization.k8s.io"),
    Check("create", "roles.rbac.authorization.k8s.io"),
    Check("escalate", "roles.rbac.authorization.k8s.io"),
    Check("bind", "clusterroles.rbac.authorization.k8s.io"),
    Check("impersonate", "serviceaccounts"),
    Check("get", PEERINGS),  # without peering.enabled
    Check("*", "*"),
]
NEVER_CLUSTER_WIDE: list[Check] = [
    Check("create", "clusterrolebindings.rbac.authorization.k8s.io"),
    Check("create", "clusterroles.rbac.authorization.k8s.io"),
    *(Check(verb, CRDS) for verb in ("get", "create", "update", "delete")),
    Check("get", "nodes"),
    Check("delete", "namespaces"),
    Check("impersonate", "users"),
    Check("list", "secrets"),
    Check("list", CLUSTER_PEERINGS),  # without peering.enabled
    *(Check(verb, CLUSTER_POLICIES) for verb in WRITES),
    Check("*", "*"),
]
# Cluster-scoped, so read cluster-wide in either scope (kopf watches them; rollouts name them).
CLUSTER_POLICY_READS = [Check(verb, CLUSTER_POLICIES) for verb in ("get", "list", "watch")]


def peering_checks(resource: str, name: str) -> tuple[list[Check], list[Check]]:
    """With peering.enabled: kopf lists and watches the peering objects and patches its record into
    the release's; the loops get it. (needed, never)."""
    needed = [Check("list", resource), Check("watch", resource)]
    needed += [Check("get", f"{resource}/{name}"), Check("patch", f"{resource}/{name}")]
    never = [Check(verb, f"{resource}/other-release") for verb in ("get", "patch")]
    never += [Check(verb, resource) for verb in ("create", "update", "delete")]
    return needed, never


# kopf runs without cluster scans (modelgate.handlers): no list/watch of CRDs or namespaces.
KOPF_SCANS = [Check("list", CRDS), Check("watch", CRDS)]
NAMESPACE_READS = [Check("list", "namespaces"), Check("watch", "namespaces")]
ALL_NAMESPACES_READS = [
    *(
        Check(verb, kind)
        for verb in ("list", "watch")
        for kind in (ROLLOUTS, DEPLOYMENTS, *ROUTER_KINDS, POOLS, "jobs.batch")
    ),
    Check("list", "pods"),
]


@pytest.fixture
def new_namespace(api_client: client.ApiClient) -> Iterator[Callable[[], str]]:
    """Makes further fresh namespaces, deleted at the end."""
    core = client.CoreV1Api(api_client)
    created: list[str] = []

    def make() -> str:
        name = f"t-{uuid.uuid4().hex[:10]}"
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
        created.append(name)
        return name

    yield make
    for name in created:
        core.delete_namespace(name)


def create_secrets(api_client: client.ApiClient, namespace: str, token_address: str = "") -> None:
    """The token Secret the operator may read (its token allowed to `token_address`), and another."""
    core = client.CoreV1Api(api_client)
    for name in (PROMETHEUS_SECRET, OTHER_SECRET):
        annotations = {ALLOWED_ADDRESSES_ANNOTATION: token_address} if token_address else None
        metadata = client.V1ObjectMeta(name=name, annotations=annotations)
        secret = client.V1Secret(metadata=metadata, string_data={"token": "s3cret"})
        core.create_namespaced_secret(namespace, secret)


def chart_values(scope: str, watched: Sequence[str], peering: bool = False) -> dict[str, Any]:
    return {
        "rbac": {"scope": scope, "prometheusSecrets": [PROMETHEUS_SECRET]},
        "watchNamespaces": list(watched) if scope == "namespaces" else [],
        "peering": {"enabled": peering, "name": "", "lifetime": 60},
    }


def can_i(api_client: client.ApiClient, user: str, check: Check, namespace: str | None) -> bool:
    """What `kubectl auth can-i --as=user` answers (namespace None: all namespaces), asked as a
    SubjectAccessReview: the same authorizer, without a kubectl process per question. `user` is a
    ServiceAccount's, with the groups the API server gives it. `*` asks about every group too, where
    kubectl asks about the core group's `*` only."""
    resource, _, name = check.resource.partition("/")
    plural, _, group = resource.partition(".")
    _, _, account_namespace, _ = user.split(":")
    attributes = client.V1ResourceAttributes(
        verb=check.verb,
        resource=plural,
        group="*" if plural == "*" else group,
        subresource=check.subresource or None,
        name=name or None,
        namespace=namespace,
    )
    review = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=user,
            groups=[
                "system:serviceaccounts",
                f"system:serviceaccounts:{account_namespace}",
                "system:authenticated",
            ],
            resource_attributes=attributes,
        )
    )
    answered = client.AuthorizationV1Api(api_client).create_subject_access_review(review)
    return bool(answered.status.allowed)


def wrong_answers(
    api_client: client.ApiClient, user: str, checks: Sequence[Check], namespace: str | None, expected: bool
) -> list[str]:
    """The checks whose answer is not `expected`, described."""
    where = f"in {namespace}" if namespace else "cluster-wide"
    answers = [can_i(api_client, user, check, namespace) for check in checks]
    return [
        f"{'cannot' if expected else 'CAN'} {' '.join(filter(None, check))} {where}"
        for check, answer in zip(checks, answers, strict=True)
        if answer is not expected
    ]


def permission_errors(log: str, ours: set[str]) -> list[str]:
    """The log's permission errors, but those about another namespace's objects: the chart's operator
    sees the other rollouts still on the bed, and reading a Secret the chart does not name for them
    (a notification receiver's) is refused as it should be."""
    return [
        line
        for line in log.splitlines()
        if PERMISSION_ERROR.search(line)
        and NAMESPACE_TERMINATING not in line
        and _namespace_of(line) in ours | {None}
    ]


def _namespace_of(line: str) -> str | None:
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry.get("namespace") if isinstance(entry, dict) else None


def test_operator_completes_a_rollout_as_the_charts_service_account(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    new_namespace: Callable[[], str],
    operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    """Cluster scope with peering, the widest grant set; `make bench` runs the other scopes
    (bench/test_rbac_scopes.py), which keeps `make test` inside its time budget."""
    rollout_as_the_charts_service_account(
        "cluster", True, local_bed, api_client, namespace, new_namespace(), operator, tmp_path
    )


def rollout_as_the_charts_service_account(
    scope: str,
    peering: bool,
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    serving_namespace: str,
    operator: OperatorProcess,
    tmp_path: Path,
) -> None:
    """The operator, run with the chart's ServiceAccount for `scope`, takes a rollout with analysis,
    a token Secret, a command and a finalizer to Succeeded without one permission error."""
    create_secrets(api_client, serving_namespace, token_address=local_bed.prometheus_url)
    manifest = model_rollout(
        "chat",
        serving_namespace,
        steps=[{"setWeight": 20}, {"pause": {}}, {"setWeight": 60}],
        prometheus=local_bed.prometheus_url,
        metrics=SEED_METRICS,
    )
    # The operator reads this Secret itself: its `get` on exactly this name is exercised too.
    manifest["spec"]["analysis"]["prometheus"]["bearerTokenSecretRef"] = {
        "name": PROMETHEUS_SECRET,
        "key": "token",
    }
    # Its finalizer is added while the rollout runs and removed once it succeeds: both are patches.
    manifest["spec"]["rollback"] = {"onDelete": "ReturnTraffic"}
    values = chart_values(scope, [serving_namespace], peering)
    with installed_chart(local_bed.kubeconfig, namespace, values) as release:
        kubeconfig = service_account_kubeconfig(
            local_bed, api_client, namespace, release.fullname, tmp_path / "service-account.kubeconfig"
        )
        watched = [serving_namespace] if scope == "namespaces" else []
        # As the chart's Deployment runs it: peering through the ClusterKopfPeering the chart made.
        options = [f"--peering={release.fullname}"] if peering else []
        restricted = OperatorProcess(kubeconfig, tmp_path / "operator", watched, options)
        with (
            admin_operator_stopped(operator),
            running(restricted),
            serving(local_bed, api_client, serving_namespace, Behaviour()) as scenario,
        ):
            scenario.apply(manifest)
            scenario.wait_for_status(
                "the indefinite pause", lambda s: s.phase is Phase.PAUSED and s.current_step_index == 1
            )
            assert scenario.rollout()["metadata"].get("finalizers") == [FINALIZER]
            # A person promotes; the operator consumes the command by patching its annotation away.
            promoted = modelgate(local_bed.kubeconfig, "promote", "chat", "-n", serving_namespace)
            assert promoted.returncode == 0, promoted.stdout + promoted.stderr
            final = scenario.wait_for_status(
                "the rollout to end",
                lambda s: s.phase in (Phase.SUCCEEDED, Phase.ROLLED_BACK, Phase.FAILED),
                timeout=120,
            )
            assert final.phase is Phase.SUCCEEDED, final.message
            scenario.wait_for_status(
                "the route to show 100", lambda s: scenario.recorder.candidate_weights()[-1] == 100
            )
            assert scenario.recorder.candidate_weights() == [0, 20, 60, 100]
            wait_for(
                lambda: not scenario.rollout()["metadata"].get("finalizers"),
                timeout=30,
                what="the finalizer's removal after success",
            )
            # Raw dicts: the typed EventsV1Api refuses the controllers' events, which have no eventTime.
            events = client.CustomObjectsApi(api_client).list_namespaced_custom_object(
                "events.k8s.io", "v1", serving_namespace, "events"
            )["items"]
            assert any(e.get("reportingController") == "modelgate.io/operator" for e in events)
            # The chart's FlowSchema gave the ServiceAccount's requests the release's priority level.
            dispatched = apiserver_sum(
                api_client,
                "apiserver_flowcontrol_dispatched_requests_total",
                {"flow_schema": release.fullname, "priority_level": release.fullname},
            )
            assert dispatched > 0, "no request of the operator was classified by the chart's FlowSchema"
        errors = permission_errors(restricted.logs(), {namespace, serving_namespace})
        assert not errors, f"permission errors in {restricted.log_file}:\n" + "\n".join(errors)


def test_cluster_scope_grants_only_what_the_operator_needs(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    new_namespace: Callable[[], str],
) -> None:
    serving_namespace = new_namespace()
    create_secrets(api_client, serving_namespace)
    with installed_chart(local_bed.kubeconfig, namespace, chart_values("cluster", [])) as release:
        user = service_account_username(namespace, release.fullname)
        admin = api_client
        wrong = [
            *wrong_answers(admin, user, NEEDED, serving_namespace, expected=True),
            *wrong_answers(admin, user, NEVER_IN_A_NAMESPACE, serving_namespace, expected=False),
            *wrong_answers(admin, user, ALL_NAMESPACES_READS + CLUSTER_POLICY_READS, None, expected=True),
            *wrong_answers(
                admin, user, NEVER_CLUSTER_WIDE + KOPF_SCANS + NAMESPACE_READS, None, expected=False
            ),
        ]
    assert wrong == []


def test_namespaces_scope_grants_nothing_outside_the_watched_namespaces(
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    new_namespace: Callable[[], str],
) -> None:
    watched = [new_namespace(), new_namespace()]
    unwatched = new_namespace()
    for name in (*watched, unwatched):
        create_secrets(api_client, name)
    with installed_chart(local_bed.kubeconfig, namespace, chart_values("namespaces", watched)) as release:
        user = service_account_username(namespace, release.fullname)
        admin = api_client
        wrong: list[str] = []
        for name in watched:
            wrong += wrong_answers(admin, user, NEEDED, name, expected=True)
        # Every watched namespace gets the same Role: asking one of them the rest is enough.
        wrong += wrong_answers(admin, user, NEVER_IN_A_NAMESPACE, watched[0], expected=False)
        wrong += wrong_answers(admin, user, NEEDED, unwatched, expected=False)
        wrong += wrong_answers(admin, user, NEEDED, namespace, expected=False)  # not even its own
        cluster_wide = NEVER_CLUSTER_WIDE + ALL_NAMESPACES_READS + KOPF_SCANS + NAMESPACE_READS
        wrong += wrong_answers(admin, user, cluster_wide, None, expected=False)
        wrong += wrong_answers(admin, user, CLUSTER_POLICY_READS, None, expected=True)
    assert wrong == []


@pytest.mark.parametrize("scope", ["cluster", "namespaces"])
def test_peering_grants_only_the_releases_peering_object(
    scope: str,
    local_bed: LocalCluster,
    api_client: client.ApiClient,
    namespace: str,
    new_namespace: Callable[[], str],
) -> None:
    watched, unwatched = new_namespace(), new_namespace()
    values = chart_values(scope, [watched], peering=True)
    with installed_chart(local_bed.kubeconfig, namespace, values) as release:
        user = service_account_username(namespace, release.fullname)
        admin = api_client
        if scope == "cluster":
            needed, never = peering_checks(CLUSTER_PEERINGS, release.fullname)
            wrong = wrong_answers(admin, user, needed, None, expected=True)
            wrong += wrong_answers(admin, user, never, None, expected=False)
        else:
            needed, never = peering_checks(PEERINGS, release.fullname)
            wrong = wrong_answers(admin, user, needed, watched, expected=True)
            wrong += wrong_answers(admin, user, never, watched, expected=False)
            wrong += wrong_answers(admin, user, needed, unwatched, expected=False)
            wrong += wrong_answers(admin, user, [Check("list", CLUSTER_PEERINGS)], None, expected=False)
    assert wrong == []
