"""docs/statistics.md's tables of the requests needed to pass a margin (ratio and absolute) and of
the fail side's detection times are what the operator's code gives in simulation
(tooling/statistics_sections.py, seeded): regenerate them with `python -m tooling.sequential_sim`
when the test changes."""

from tooling.sequential_sim import DOC
from tooling.statistics_sections import render_detection, render_passing


def test_the_requests_needed_to_pass_are_the_simulations() -> None:
    assert "\n".join(render_passing()) in DOC.read_text()


def test_the_fail_sides_detection_times_are_the_simulations() -> None:
    assert "\n".join(render_detection()) in DOC.read_text()
