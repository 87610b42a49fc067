"""Recorded production requests to replay: JSONL, one request per line.

Recorded production requests to replay: JSONL, one request per line, `{"messages": [...]}` or
`{"prompt": "..."}`, optionally with `model`, `max_tokens` and `stream` (a request sent streaming is
replayed streaming); other recorded fields are ignored."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, PositiveInt, StrictBool, model_validator

from modelgate.evaluator.jsonl import InputError, json_lines, parse_line

T = TypeVar("T")


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True)

    role: str = Field(min_length=1)
    content: str | list[Any]


class _RecordedSpec(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    messages: list[_Message] | None = Field(None, min_length=1)
    prompt: str | None = Field(None, min_length=1)
    model: str | None = None
    max_tokens: PositiveInt | None = None
    # Strict: pydantic would otherwise read "false" or 0 as a boolean, and replay a guess.
    stream: StrictBool = False

    @model_validator(mode="after")
    def _one_form(self) -> _RecordedSpec:
        if (self.messages is None) == (self.prompt is None):
            raise ValueError("exactly one of messages or prompt expected")
        return self


@dataclass(frozen=True)
class RecordedRequest:
    line: int
    messages: tuple[dict[str, Any], ...]
    model: str | None
    max_tokens: int | None
    stream: bool = False


def parse_replay(text: str, source: str) -> list[RecordedRequest]:
    requests = []
    for number, value in json_lines(text, source):
        spec = parse_line(_RecordedSpec, value, f"{source}, line {number}")
        messages = (
            tuple(m.model_dump() for m in spec.messages)
            if spec.messages is not None
            else ({"role": "user", "content": spec.prompt},)
        )
        requests.append(RecordedRequest(number, messages, spec.model, spec.max_tokens, spec.stream))
    if not requests:
        raise InputError(f"{source}: no recorded requests")
    return requests


def seeded_sample(items: Sequence[T], size: int | None, seed: int) -> list[T]:
    """`size` items drawn without replacement (all of them when `size` is None or larger), the same
    ones for the same seed, kept in their order."""
    if size is None or size >= len(items):
        return list(items)
    chosen = sorted(random.Random(seed).sample(range(len(items)), size))
    return [items[index] for index in chosen]
