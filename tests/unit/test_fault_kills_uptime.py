"""The kill scenario's tolerance (tests/support/faults/kills.py): a pause counts from its end, or from
the operator's return after the last kill before the pause ended."""

from __future__ import annotations

from tests.support.faults.kills import Uptime

# Up from 0 (health check passing) to a kill at 10, back at 14, killed at 20, back at 25.
UPTIME = Uptime([(0, 10), (14, 20), (25, None)])


def test_a_pause_ended_in_the_run_that_was_up_at_its_end_counts_from_its_end() -> None:
    assert UPTIME.accountable_from(due=15, ended=15.5) == 15


def test_a_pause_the_operator_was_killed_before_ending_counts_from_its_return() -> None:
    assert UPTIME.accountable_from(due=18, ended=25.8) == 25


def test_a_restarted_operator_that_acts_before_its_health_check_passes_is_not_late() -> None:
    # Ended at 23, before the return at 25 was seen: not charged from the killed run's due moment.
    assert UPTIME.accountable_from(due=18, ended=23) == 25
    assert UPTIME.accountable_from(due=12, ended=13.5) == 14  # due while it was down


def test_a_return_long_before_the_end_does_not_move_it() -> None:
    assert UPTIME.accountable_from(due=30, ended=30.4) == 30
