"""What the engine reads (observations, commands), what a rule asks of a tick (an intent) and what
the engine decides (a Decision).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from modelgate.api import (
    ModelRolloutSpec,
    ModelRolloutStatus,
    PauseReason,
    Phase,
    RollbackReason,
    RolloutRef,
    RouteState,
)
from modelgate.api.gate_status import GateStatus
from modelgate.api.group_members import GroupMember
from modelgate.api.notifications import PendingNotification
from modelgate.core.gate_judgement import CheckObservation
from modelgate.core.reasons import ConditionType, EventType, Reason
from modelgate.core.results import AnalysisRun, GeneratedChange, GeneratedObjects

# -- model -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LiveRoute:
    """The weights a router read back from what is live. `other_writer` names the writer (a field
    manager) other than the operator that last changed the backendRefs, when the router can tell;
    None when the operator itself wrote them last or nobody can say. `mirror_percent` is the share of
    requests the route copies to the candidate (0: none). `differing` says which of several routes
    moved together do not carry these weights and mirror (None when all do): then they are not live,
    whatever they are. `owners` are the rollouts whose claim the rule (or rules) carry: empty while
    none does (routers/claims.py)."""

    incumbent_weight: int
    candidate_weight: int
    other_writer: str | None = None
    mirror_percent: int = 0
    differing: str | None = None
    owners: frozenset[RolloutRef] = frozenset()


@dataclass(frozen=True)
class RouteClaim:
    """Another rollout's claim on the route rule this one names, and whether that rollout has ended
    (Succeeded, RolledBack or Failed, deleted, or recreated under its name): an ended owner's rule may
    be taken over."""

    owner: RolloutRef
    owner_ended: bool


@dataclass(frozen=True)
class RouteProblem:
    """The route cannot be used as configured (missing route, rule or backend)."""

    reason: Reason
    message: str


@dataclass(frozen=True)
class SpecProblem:
    """A spec the operator cannot use although the API server took it (an older CRD, or what only
    the operator can check, such as a query template); `message` names the field."""

    message: str


@dataclass(frozen=True)
class WriteFailed:
    """A weight write that could not be made (e.g. other writers changed the route every time)."""

    message: str


WriteResult = LiveRoute | RouteProblem | WriteFailed


class CommandAction(StrEnum):
    PROMOTE = "promote"
    PROMOTE_FULL = "promote-full"
    ABORT = "abort"
    RESUME = "resume"
    RETRY = "retry"
    # Adopt spec.policyRef's policy as it is now (policy_plans.py handles it before the engine).
    REPIN = "repin"


@dataclass(frozen=True)
class Command:
    """A manual command from the CLI; `id` makes handling it idempotent across restarts."""

    action: CommandAction
    id: str


COMMAND_ANNOTATION = "modelgate.io/command"


class CommandProblem(StrEnum):
    """What is wrong with a command annotation that is not a command."""

    NOT_JSON = "is not JSON"
    NOT_AN_OBJECT = "is not a JSON object"
    UNKNOWN_ACTION = "names no known action"
    BAD_ID = "has no id of 1 to 253 characters"


@dataclass(frozen=True)
class UnreadableCommand:
    """A command annotation that is not a command (written by hand, or by another tool): ignored with
    a Warning Event, and removed like a handled command. `id`, from its value, says it once."""

    value: str
    problem: CommandProblem

    @property
    def id(self) -> str:
        return "unreadable-" + hashlib.sha256(self.value.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ReadyReplicas:
    """Ready replicas of each side, read when spec.capacity.enforce is set."""

    candidate: int
    incumbent: int


@dataclass(frozen=True)
class MemberAvailability:
    """Whether one workload of a grouped side (spec.*.members) can serve, as read this tick."""

    role: str
    field: str  # the spec field that names it: spec.candidate.members[1]
    available: bool
    message: str


@dataclass(frozen=True)
class Observations:
    generation: int
    candidate_available: bool
    candidate_message: str
    route: LiveRoute | RouteProblem
    analysis: AnalysisRun | None = None
    command: Command | UnreadableCommand | None = None
    ready_replicas: ReadyReplicas | None = None
    # The rollout's name and uid name its gate's Jobs; what each Job showed, by check name.
    rollout: str = ""
    uid: str = ""
    gate_checks: Mapping[str, CheckObservation] = field(default_factory=dict)
    # Read in the watch window only (None otherwise): a rollback then sends everything to the incumbent.
    incumbent_available: bool | None = None
    incumbent_message: str = ""
    # A grouped side's members, each read when its side's availability is (core/policy.py joins them).
    candidate_members: tuple[MemberAvailability, ...] = ()
    incumbent_members: tuple[MemberAvailability, ...] = ()
    # The analysis's queries (some or all) cannot be built from the spec; naming the field.
    query_problem: SpecProblem | None = None
    # The analysis's queries run once to see that they answer, when query_check.check_due says so.
    analysis_check: AnalysisRun | None = None
    # The rollout carries the finalizer that returns the traffic on deletion (core/actions.py).
    has_finalizer: bool = False
    namespace: str = ""
    # The keys of status.notifications.pending whose delivery ended (delivered, or given up on).
    notified: frozenset[str] = frozenset()
    # Another rollout's claim on the route rule (None: unclaimed, or this rollout's own).
    route_claim: RouteClaim | None = None
    # What exists of a one-edit rollout's generated candidate (spec.candidatePatch); None otherwise.
    generated: GeneratedObjects | None = None

    @property
    def rollout_ref(self) -> RolloutRef:
        return RolloutRef(namespace=self.namespace, name=self.rollout, uid=self.uid)


@dataclass(frozen=True)
class Event:
    reason: Reason
    message: str

    @property
    def type(self) -> EventType:
        return self.reason.event_type


@dataclass(frozen=True)
class Outcome:
    """The end a rollout reached in this tick, and why: what the operator's metrics count."""

    phase: Phase  # Succeeded, RolledBack or Failed
    reason: Reason


# The effects of a tick, in the order the reconciler applies them (core/actions.py decides them).


@dataclass(frozen=True)
class SetFinalizer:
    """Add the finalizer that returns the traffic on deletion (core/actions.py): nothing is written
    before it is there."""


@dataclass(frozen=True)
class RemoveFinalizer:
    """Remove it: the rollout no longer needs it, or being deleted, its traffic is returned.
    `once_returned`: only if the route write before it took (core/actions.py)."""

    once_returned: bool = False


@dataclass(frozen=True)
class WriteRoute:
    """Write the candidate's weight and mirror. `warned`: a WeightNotApplied Warning is out already, so
    a write that does not take again says nothing new."""

    weight: int
    mirror_percent: int
    warned: bool = False


@dataclass(frozen=True)
class CollectEvidence:
    """Ask the metric provider for the requests and pods behind a metric breach (a rollback's)."""

    reason: RollbackReason


@dataclass(frozen=True)
class PostEvents:
    """The Events as posted (core/notifying.py combines the routine ones)."""

    events: tuple[Event, ...]


@dataclass(frozen=True)
class WriteStatus:
    """Write the status; `may_wait`: core/stepping.py may keep it in memory for a while."""

    status: ModelRolloutStatus
    may_wait: bool


@dataclass(frozen=True)
class StartGateChecks:
    """Start the gate's check Jobs that are not running (idempotent)."""

    gate: GateStatus


@dataclass(frozen=True)
class DeleteGateJobs:
    """The gate decided: its Jobs go (their evidence is in status)."""

    gate: GateStatus


@dataclass(frozen=True)
class ScaleDownIncumbent:
    """spec.watch.scaleDownIncumbent, the window passed: the incumbent workload (or each workload of
    its group) to 0 replicas."""

    name: str
    kind: str = "Deployment"
    member: GroupMember | None = None  # a group member's (spec.incumbent.members[])


@dataclass(frozen=True)
class ClearCommand:
    """The command annotation was handled (its result is in status.lastCommand): remove it."""

    command_id: str


@dataclass(frozen=True)
class Notify:
    """Deliver one pending transition to the rollout's receivers (core/notifying.py builds its payload
    from `status`, the one the tick settled on). `key`: the idempotency key."""

    key: str
    pending: PendingNotification
    rollout: str
    namespace: str
    uid: str
    checksum: str
    spec: ModelRolloutSpec
    status: ModelRolloutStatus


@dataclass(frozen=True)
class RecordEnding:
    """The rollout reached an end in this tick (after the status that says so is written): the
    operator counts it (promotions, rollbacks by cause) and logs it; the cause is in no status field."""

    outcome: Outcome


@dataclass(frozen=True)
class ChangeGenerated:
    """A one-edit rollout's change to what the operator generates (core/endings.py decides it)."""

    change: GeneratedChange


Action = (
    SetFinalizer
    | RemoveFinalizer
    | WriteRoute
    | CollectEvidence
    | PostEvents
    | WriteStatus
    | StartGateChecks
    | DeleteGateJobs
    | ScaleDownIncumbent
    | ClearCommand
    | Notify
    | RecordEnding
    | ChangeGenerated
)


@dataclass(frozen=True)
class Decision:
    """One tick's result: the status it settles on and every effect of it as an action, in the order
    they are applied (core/actions.py; the actions are the only record of a route write, an Event or
    a scale-down or an ending: core/actions.py applies them in memory, the reconciler to the
    cluster)."""

    status: ModelRolloutStatus
    actions: tuple[Action, ...] = ()
    # When the rollout is looked at again (core/stepping.py's next_wakeup, over the status once its
    # write settled); None for the decisions that wake at the operator's resync.
    wake_at: datetime | None = None


# -- intents ---------------------------------------------------------------------------------------
# What a feature rule asks of a tick, as data: the engine (core/engine.py) evaluates the rules of a phase in
# one ordered list (core/policy.py), and the first that returns an intent (not None) decides the tick. What a
# rule or a bookkeeping step saw is data too (the effects below), which the engine alone records
# (core/engine.py): no rule writes.


@dataclass(frozen=True)
class Hold:
    """No step advances this tick; `message` (when set) becomes the status message. `pause`: the
    pause that holds the rollout (status.pause), when one does; a wait (for the candidate, its
    capacity, the queries, the watch window's end) has none, and ends by itself.
    With `cause`, the pause begins (or goes on) in this tick, and the engine records it: status.pause
    saying `detail`, phase Paused (a Pending rollout stays Pending), condition AnalysisHealthy False
    for `cause`, and `event` (said once, when the pause begins)."""

    message: str | None = None
    pause: PauseReason | None = None
    cause: Reason | None = None
    detail: str = ""
    event: Event | None = None
    without_events: tuple[str, ...] = ()  # status.pause.metricsWithoutEvents, when the pause begins


@dataclass(frozen=True)
class RollBack:
    reason: RollbackReason
    cause: Reason


@dataclass(frozen=True)
class Fail:
    """The rollout cannot go on (a progress deadline whose action is fail), said in `event` if set."""

    reason: Reason
    message: str
    event: Event | None = None


@dataclass(frozen=True)
class SetWeight:
    weight: int


@dataclass(frozen=True)
class EnterStep:
    """Into step `index` (past the last: success, or the watch window); with `through_complete`, on
    through the steps already complete (as when the steps start)."""

    index: int
    through_complete: bool = True


@dataclass(frozen=True)
class Succeed:
    """Straight to 100%: a full release, `modelgate promote --full`."""


@dataclass(frozen=True)
class StartOver:
    """From step 0 again, the status fresh (`modelgate retry`)."""

    reason: Reason
    message: str


@dataclass(frozen=True)
class RaiseWeight:
    """The current setWeight step raises its weight, which waited for the candidate's capacity: the
    step's clock starts now, and the rollout goes on through the steps already complete."""

    index: int
    weight: int


@dataclass(frozen=True)
class Advance:
    """On to the next stage: from Pending to the gate or step 0, through the completed steps, or out
    of a watch window that has passed."""


Intent = Hold | RollBack | Fail | SetWeight | EnterStep | Succeed | StartOver | RaiseWeight | Advance | None


# -- what a rule or a bookkeeping step saw, for the engine to record (core/engine.py) ------------------
@dataclass(frozen=True)
class Fields:
    """Status fields and their new values."""

    values: Mapping[str, object]


def fields(**values: object) -> Fields:
    return Fields(values)


@dataclass(frozen=True)
class Say:
    """An Event."""

    reason: Reason
    message: str


@dataclass(frozen=True)
class SetCondition:
    type: ConditionType
    ok: bool
    reason: Reason
    message: str


@dataclass(frozen=True)
class BeginPause:
    """status.pause for `reason`, unless the same pause goes on or a route conflict holds."""

    reason: PauseReason
    message: str


@dataclass(frozen=True)
class EndPause:
    """No pause, if the pause is for one of `reasons`."""

    reasons: tuple[PauseReason, ...]


@dataclass(frozen=True)
class SetRouteState:
    state: RouteState
    message: str


@dataclass(frozen=True)
class AskWeight:
    """The candidate weight to write (unless live, or the route is held for another writer and
    this is not a rollback's: `even_when_held`)."""

    weight: int
    even_when_held: bool = False


@dataclass(frozen=True)
class StepNote:
    """What the current step waits for, as the status message."""

    text: str


Effect = Fields | Say | SetCondition | BeginPause | EndPause | SetRouteState | AskWeight | StepNote


@dataclass(frozen=True)
class Noted:
    """A rule's "record this and go on": the engine folds `effects`, then asks the next rule."""

    effects: tuple[Effect, ...]
