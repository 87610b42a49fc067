"""The bed waits for its CRDs with one list: every one Established, a CRD just created (no
conditions yet) not."""

from __future__ import annotations

import json
from typing import Any

from testbed.crds import all_established


def listed(*statuses: dict[str, Any]) -> str:
    return json.dumps(
        {"items": [{"metadata": {"name": f"c{i}"}, "status": s} for i, s in enumerate(statuses)]}
    )


ESTABLISHED = {
    "conditions": [{"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "True"}]
}


def test_every_crd_established_is_ready_and_one_without_conditions_is_not() -> None:
    assert all_established(lambda *_: listed(ESTABLISHED, ESTABLISHED))
    assert not all_established(lambda *_: listed(ESTABLISHED, {"conditions": None}))
    assert not all_established(lambda *_: listed(ESTABLISHED, {}))
    pending = {"conditions": [{"type": "Established", "status": "False"}]}
    assert not all_established(lambda *_: listed(pending, ESTABLISHED))
