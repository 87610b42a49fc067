"""A stored input or output that `modelgate eval` could not read or write, saying which.

A stored input or output that `modelgate eval` could not read or write, saying which one, so that
the operator can name the field of the spec that points at it (api/gate_result.py StoredData)."""

from __future__ import annotations

from modelgate.api.gate_result import StoredData
from modelgate.evaluator.jsonl import InputError


class StorageFailure(Exception):
    def __init__(self, message: str, data: StoredData) -> None:
        super().__init__(message)
        self.data = data


class StoredInputError(StorageFailure, InputError):
    """An input (test set, replay set, recorded requests) that could not be read from storage."""


class ResultsNotStored(StorageFailure, RuntimeError):
    """The full results could not be written; names --results, the key and why."""
