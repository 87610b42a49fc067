"""ModelRollout.status.routeState: what the operator last found on the route, as data. The RouteReady
condition says the same for people; the operator reads this field, never the condition."""

from enum import StrEnum


class RouteState(StrEnum):
    """Values are the RouteReady condition's reasons."""

    FOUND = "RouteFound"  # the route and both backends exist, and carry what was written
    WEIGHT_NOT_APPLIED = "WeightNotApplied"  # a write did not take (retried; warned once)
    OVERWRITTEN = "RouteOverwritten"  # another writer changed the weights; written back once
    CONFLICT = "RouteConflict"  # another writer changed them again: held until a command
    ROUTE_NOT_FOUND = "RouteNotFound"
    RULE_NOT_FOUND = "RuleNotFound"
    BACKEND_NOT_FOUND = "BackendNotFound"
    BACKEND_AMBIGUOUS = "BackendAmbiguous"

    @property
    def overwrite_noticed(self) -> bool:
        """Another writer was noticed in this rollout (said once; kept until a command or a new rollout)."""
        return self in (RouteState.OVERWRITTEN, RouteState.CONFLICT)
