"""docs/statistics.md's table of the requests needed to pass a margin is what the operator's code
gives in simulation (tooling/sequential_sim.py, seeded): regenerate it with
`python -m tooling.sequential_sim` when the test changes."""

from tooling.sequential_sim import DOC, render_passing


def test_the_requests_needed_to_pass_are_the_simulations() -> None:
    assert "\n".join(render_passing()) in DOC.read_text()
