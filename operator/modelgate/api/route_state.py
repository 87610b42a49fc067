"""ModelRollout.status.routeState: what the operator last found on the route, as data. The RouteReady
condition says the same for people; the operator reads this field, never the condition."""

from enum import StrEnum


class RouteState(StrEnum):
    """Values are the RouteReady condition's reasons."""

    FOUND = "RouteFound"  # the route and both backends exist, and carry what was written
    WEIGHT_NOT_APPLIED = "WeightNotApplied"  # a write did not take (retried; warned once)
    OVERWRITTEN = "RouteOverwritten"  # another writer changed the weights; written back once
    CONFLICT = "RouteConflict"  # another writer changed them again: held until a command
    CLAIMED = "RouteClaimed"  # another rollout owns the rule (status.routeOwner): nothing written
    INCUMBENT_NOT_SERVED = "IncumbentNotServed"  # a finished owner left the rule on another backend
    HANDED_OVER = "RouteHandedOver"  # this finished rollout handed the rule to a newer one
    ROUTE_NOT_FOUND = "RouteNotFound"
    RULE_NOT_FOUND = "RuleNotFound"
    BACKEND_NOT_FOUND = "BackendNotFound"
    BACKEND_AMBIGUOUS = "BackendAmbiguous"

    @property
    def overwrite_noticed(self) -> bool:
        """Another writer was noticed in this rollout (said once; kept until a command or a new rollout)."""
        return self in (RouteState.OVERWRITTEN, RouteState.CONFLICT)

    @property
    def held_by_claim(self) -> bool:
        """Another rollout's claim keeps this one from writing the route (core/holds.py)."""
        return self in (RouteState.CLAIMED, RouteState.INCUMBENT_NOT_SERVED, RouteState.HANDED_OVER)
