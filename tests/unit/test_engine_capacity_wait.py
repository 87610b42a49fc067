"""A step's wait for Ready candidate replicas is status data (status.capacityWaitSince), not read back
from condition CandidateCapacity, which is output only; a status from an older operator, with the
wait known only from that condition, is read once into the field."""

from __future__ import annotations

from datetime import timedelta

from modelgate.api import ModelRolloutStatus, Phase
from modelgate.core import ReadyReplicas, Reason

from .engine_support import Simulator, event_reasons, round_trip
from .test_engine_capacity import capacity_spec


def _waiting() -> Simulator:
    sim = Simulator(capacity_spec(), ready=ReadyReplicas(candidate=1, incumbent=10))
    sim.start()  # 20% of 10 needs 2
    assert sim.status.capacity_wait_since == sim.now
    return sim


def test_the_wait_is_a_status_field_from_its_start_until_the_weight_is_raised() -> None:
    sim = _waiting()
    began = sim.now
    sim.tick(after=timedelta(seconds=10))
    assert sim.status.capacity_wait_since == began
    sim.ready = ReadyReplicas(candidate=2, incumbent=10)
    raised = sim.tick(after=timedelta(seconds=1))
    assert (raised.written, sim.status.capacity_wait_since) == (20, None)
    assert Reason.CAPACITY_AVAILABLE in event_reasons(raised)


def _as_an_older_operator_wrote_it(status: ModelRolloutStatus) -> ModelRolloutStatus:
    document = round_trip(status).model_dump(by_alias=True, exclude_none=True)
    document.pop("capacityWaitSince")
    return ModelRolloutStatus.model_validate(document)


def test_a_wait_an_older_operator_reported_only_as_a_condition_is_still_a_wait() -> None:
    sim = _waiting()
    began = sim.now
    sim.status = _as_an_older_operator_wrote_it(sim.status)
    sim.conditions_unread = False  # the upgrade reads them, once
    still = sim.tick(after=timedelta(seconds=10))
    assert Reason.INSUFFICIENT_CAPACITY not in event_reasons(still)  # said once, before the upgrade
    assert sim.status.capacity_wait_since == began
    sim.ready = ReadyReplicas(candidate=2, incumbent=10)
    raised = sim.tick(after=timedelta(seconds=1))
    assert (sim.phase, raised.written, sim.status.capacity_wait_since) == (Phase.PROGRESSING, 20, None)
    assert Reason.CAPACITY_AVAILABLE in event_reasons(raised)
