"""onDelete: the finalizer only on ReturnTraffic rollouts that could still leave the candidate traffic,
and the weight a deletion writes before it goes."""

from __future__ import annotations

import pytest

from modelgate.api import ModelRolloutSpec, ModelRolloutStatus, Phase, RollingBack
from modelgate.core import LiveRoute
from modelgate.core.actions import finalizer_wanted, weight_on_delete
from tests.unit.engine_support import ROUTE_NOT_FOUND, T0, live, make_spec, weight


def spec(on_delete: str) -> ModelRolloutSpec:
    base = make_spec(weight(20), weight(100))
    rollback = base.rollback.model_validate(
        {**base.rollback.model_dump(by_alias=True), "onDelete": on_delete}
    )
    return base.model_copy(update={"rollback": rollback})


def status(phase: Phase, live_weight: int, rolling: bool = False) -> ModelRolloutStatus:
    step_down = RollingBack(started_at=T0, from_weight=20, ends_at=T0) if rolling else None
    return ModelRolloutStatus(
        phase=phase, current_weight=live_weight, live_weight=live_weight, rolling_back=step_down
    )


@pytest.mark.parametrize(
    ("phase", "live_weight", "rolling", "wanted"),
    [
        (Phase.PENDING, 0, False, True),
        (Phase.PROGRESSING, 20, False, True),
        (Phase.PAUSED, 20, False, True),
        (Phase.FAILED, 20, False, True),  # weights left where they were
        (Phase.ROLLED_BACK, 10, True, True),  # still stepping down
        (Phase.ROLLED_BACK, 0, False, False),
        (Phase.SUCCEEDED, 100, False, False),
    ],
)
def test_the_finalizer_is_there_while_deleting_could_leave_the_candidate_traffic(
    phase: Phase, live_weight: int, rolling: bool, wanted: bool
) -> None:
    assert finalizer_wanted(spec("ReturnTraffic"), status(phase, live_weight, rolling)) is wanted
    assert finalizer_wanted(spec("Leave"), status(phase, live_weight, rolling)) is False


def test_a_deletion_returns_the_candidates_traffic() -> None:
    assert weight_on_delete(spec("ReturnTraffic"), status(Phase.PAUSED, 20), live(20)) == 0
    assert weight_on_delete(spec("ReturnTraffic"), status(Phase.ROLLED_BACK, 10, True), live(10)) == 0


def test_a_deletion_during_a_mirror_step_stops_the_copies() -> None:
    mirroring = LiveRoute(incumbent_weight=100, candidate_weight=0, mirror_percent=30)
    assert weight_on_delete(spec("ReturnTraffic"), status(Phase.PROGRESSING, 0), mirroring) == 0


@pytest.mark.parametrize(
    ("on_delete", "phase", "route"),
    [
        ("Leave", Phase.PAUSED, live(20)),
        ("ReturnTraffic", Phase.SUCCEEDED, live(100)),
        ("ReturnTraffic", Phase.PAUSED, live(0)),
        ("ReturnTraffic", Phase.FAILED, ROUTE_NOT_FOUND),
    ],
)
def test_a_deletion_with_nothing_to_return_writes_nothing(
    on_delete: str, phase: Phase, route: object
) -> None:
    assert weight_on_delete(spec(on_delete), status(phase, 20), route) is None  # type: ignore[arg-type]
    assert weight_on_delete(None, status(phase, 20), route) is None  # type: ignore[arg-type]
