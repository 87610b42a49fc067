"""Label values derived from object names. A name may have up to 253 characters, a label value 63:
a longer name is cut and given a hash of the whole, so that two long names sharing a prefix keep
distinct values. Everything that builds or selects by such a label goes through `label_value`."""

from __future__ import annotations

import hashlib

MAX_LABEL_VALUE = 63
_DIGEST = 10


# On what a rollout creates (check Jobs, a one-edit candidate): the rollout's name as a label value.
ROLLOUT_LABEL = "modelgate.io/rollout"


def label_value(name: str) -> str:
    """`name` when it fits a label value; else its first characters, '-', and a hash of all of it."""
    if len(name) <= MAX_LABEL_VALUE:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:_DIGEST]
    kept = name[: MAX_LABEL_VALUE - _DIGEST - 1].rstrip("-._")
    return f"{kept}-{digest}"
