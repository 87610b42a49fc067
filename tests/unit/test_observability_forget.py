"""A deleted rollout's per-rollout series go with it, so the operator does not report it forever."""

from __future__ import annotations

from prometheus_client import REGISTRY

from modelgate import observability


def test_forgetting_a_rollout_drops_its_series_and_keeps_the_others() -> None:
    observability.ROLLOUT_TICKS.labels("team-a", "chat").inc()
    observability.ROLLOUT_TICKS.labels("team-a", "embed").inc(2)
    observability.ROLLOUT_WEIGHT.labels("team-a", "chat").set(30)

    observability.forget_rollout("team-a", "chat")

    chat, embed = ({"namespace": "team-a", "rollout": name} for name in ("chat", "embed"))
    assert REGISTRY.get_sample_value("modelgate_rollout_reconciles_total", chat) is None
    assert REGISTRY.get_sample_value("modelgate_rollout_candidate_weight", chat) is None
    assert REGISTRY.get_sample_value("modelgate_rollout_reconciles_total", embed) == 2
    observability.forget_rollout("team-a", "embed")
