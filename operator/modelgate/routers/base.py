"""The one interface every traffic router implements, and what it is told of the two sides."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from modelgate.api import BackendKind, ModelRolloutSpec, RolloutRef
from modelgate.core import LiveRoute, RouteProblem


@dataclass(frozen=True)
class AdapterSides:
    """Two adapters (model names) of one InferencePool: the targets an InferenceModelRewrite weighs."""

    pool: str
    incumbent: str
    candidate: str


@dataclass(frozen=True)
class SideKinds:
    """What each side of the rollout is, so that a router looks for the right kind of backend: a
    Deployment side is reached through a Service, an InferencePool side through the pool itself, and
    two adapters of one pool through a rewrite's targets (`adapters`). A `generated` candidate (spec.
    candidatePatch) has a backendRef only while it exists: absent, it gets nothing."""

    incumbent: BackendKind = "Deployment"
    candidate: BackendKind = "Deployment"
    adapters: AdapterSides | None = None
    generated: bool = False

    @classmethod
    def of(cls, spec: ModelRolloutSpec) -> SideKinds:
        incumbent, candidate = spec.incumbent, spec.candidate
        adapters = None
        if incumbent.adapter is not None and candidate.adapter is not None:
            adapters = AdapterSides(incumbent.name, incumbent.adapter, candidate.adapter)
        return cls(incumbent.backend_kind, candidate.backend_kind, adapters, spec.candidate_patch is not None)


DEPLOYMENT_SIDES = SideKinds()  # both sides Deployments, each reached through a Service


class TrafficRouter(Protocol):
    """Splits traffic between the incumbent and the candidate; one instance per tick. Calls block
    (worker threads).

    A RouteProblem is a configuration that cannot work as it stands (the route, rule or a backend
    is missing or ambiguous); the rollout fails on it. When the API server cannot be asked, the
    methods raise modelgate.kube.KubeError instead, which the caller retries on its next tick.
    """

    def read(self) -> LiveRoute | RouteProblem:
        """The weights (and the share mirrored to the candidate) that are live now, or why the route
        cannot be used."""
        ...

    def set_weights(
        self, candidate_weight: int, mirror_percent: int = 0, owner: RolloutRef | None = None
    ) -> LiveRoute | RouteProblem:
        """Routes `candidate_weight` (0..100) to the candidate and the rest to the incumbent, copies
        `mirror_percent` (0..100; 0: none) of the requests to the candidate, and verifies: returns the
        weights and mirror as stored by the write (what is live), or why the route cannot be used (then
        nothing was written). Weights and mirror are one write, so the route never carries a mirror
        without the weights it goes with. A router that cannot mirror returns a RouteProblem when asked
        to. The write is made against what `read` saw, so a tick reads the route once; another writer
        in between makes it read again and retry. With `owner`, the write claims the rule for that
        rollout (claims.py); another rollout's claim that `read` did not see raises a Conflict."""
        ...
