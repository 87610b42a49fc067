"""An answer's output tokens, as OpenAI-compatible servers report them.

An answer's output tokens, as OpenAI-compatible servers report them: `usage.completion_tokens` of a
whole answer, or of a stream's usage chunk (sent when the request asks
`stream_options.include_usage`). Pure. A count the server did not report is None, never 0: pieces
of a stream are not tokens (a chunk may carry several, or none), so they are not counted instead."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from modelgate.api.gate_result import MAX_ANSWER_TOKENS

# Asked with every streamed request, so that its last chunk carries the usage.
STREAM_OPTIONS = {"include_usage": True}


def output_tokens(document: Mapping[str, Any]) -> int | None:
    """`usage.completion_tokens` of a completion or a chunk; None when it is missing or not a count."""
    usage = document.get("usage")
    tokens = usage.get("completion_tokens") if isinstance(usage, dict) else None
    if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 <= tokens <= MAX_ANSWER_TOKENS:
        return None
    return tokens


def answer_output_tokens(body: bytes) -> int | None:
    """The output tokens a whole (non-streamed) answer's body reports."""
    try:
        document = json.loads(body)
    except ValueError:
        return None
    return output_tokens(document) if isinstance(document, dict) else None
