"""The full per-item results of a run, as JSONL, both sides' answers included.

The full per-item results of a run (docs/object-storage.md): a JSONL whose first line is the
GateResult and the inputs' content hashes, then one line per test-set item and per replayed
request, with both sides' answers. Pure: the runner adds to it, the CLI writes it out."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from modelgate.api.gate_result import GateResult
from modelgate.api.gate_shard import ShardResult
from modelgate.evaluator.replay_set import RecordedRequest
from modelgate.evaluator.scoring import Reply, passes
from modelgate.evaluator.testset import Item

HASH_PREFIX = "sha256-"
HASH_HEX_DIGITS = 16


def content_version(text: str) -> str:
    """An input's version: the start of its content's SHA-256, the same wherever it was read from."""
    return HASH_PREFIX + hashlib.sha256(text.encode()).hexdigest()[:HASH_HEX_DIGITS]


@dataclass
class ItemResults:
    """What a run measured, item by item, and the versions of the inputs it read."""

    inputs: dict[str, dict[str, str]] = field(default_factory=dict)
    lines: list[dict[str, Any]] = field(default_factory=list)

    def read(self, name: str, source: str, text: str) -> None:
        self.inputs[name] = {"source": source, "version": content_version(text)}

    @property
    def version(self) -> str:
        """The version of the test set, or of the replay set when there is none."""
        for name in ("testSet", "replay"):
            if name in self.inputs:
                return self.inputs[name]["version"]
        return "no-inputs"

    def add_test_set(
        self, items: Sequence[Item], candidate: Sequence[Reply], incumbent: Sequence[Reply]
    ) -> None:
        for item, mine, theirs in zip(items, candidate, incumbent, strict=True):
            self.lines.append(
                {
                    "kind": "testSet",
                    "id": item.id,
                    "capability": item.capability,
                    "candidate": {**_reply(mine), "passed": passes(item, mine)},
                    "incumbent": {**_reply(theirs), "passed": passes(item, theirs)},
                }
            )

    def add_replay(
        self, recorded: Sequence[RecordedRequest], candidate: Sequence[Reply], incumbent: Sequence[Reply]
    ) -> None:
        for request, mine, theirs in zip(recorded, candidate, incumbent, strict=True):
            sides = {"candidate": _reply(mine), "incumbent": _reply(theirs)}
            self.lines.append({"kind": "replay", "line": request.line, **sides})

    def jsonl(self, result: GateResult | ShardResult) -> bytes:
        """The lines; the first has the run's result (a shard's: its counts)."""
        summary = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        header = {"result": summary, "inputs": self.inputs}
        return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in [header, *self.lines]).encode()


def _reply(reply: Reply) -> dict[str, Any]:
    shown = {
        "answer": reply.text,
        "finishReason": reply.finish_reason,
        "latencySeconds": reply.latency_seconds,
        "outputTokens": reply.output_tokens,  # absent: the server reported no count
        "error": reply.error,
    }
    return {key: value for key, value in shown.items() if value is not None}
