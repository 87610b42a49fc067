"""One recorded request as a redacted line of the gate's replay format; pure.

One recorded request, as a line of the gate's replay format (evaluator/replay_set.py): the
request's messages (or prompt), `model`, `max_tokens` and `stream`, the answer's text and when it was
recorded, every text redacted. Pure.

Only what a replay needs is kept: other request fields (`user`, tools, sampling parameters) and
message parts other than text (images, audio) are left out."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from modelgate.chat_answers import Answer
from modelgate.recordings import RECORDED_AT, format_time
from modelgate.sidecar.redaction import Redactor

# Between the beginning and the end of an answer too long to keep whole (chat_answers.TextLimits).
ELISION = "\n[...]\n"


def record_line(
    body: bytes, answer: Answer | None, recorded_at: datetime, redactor: Redactor
) -> bytes | None:
    """The JSONL line (newline included) of a request body and its answer, or None when the body is
    not a chat or completion request the replay can send again."""
    try:
        request = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(request, dict):
        return None
    asked = _asked(request, redactor)
    if asked is None:
        return None
    record: dict[str, Any] = asked | _options(request)
    if answer is not None and answer.choices:
        first = answer.choices[0]
        text = first.text if first.tail is None else first.text + ELISION + first.tail
        record["answer"] = redactor.text(text)
    record[RECORDED_AT] = format_time(recorded_at)
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _asked(request: Mapping[str, Any], redactor: Redactor) -> dict[str, Any] | None:
    messages = request.get("messages")
    if isinstance(messages, list):
        kept = [m for m in (_message(m, redactor) for m in messages) if m is not None]
        return {"messages": kept} if kept and len(kept) == len(messages) else None
    prompt = request.get("prompt")
    if isinstance(prompt, str) and prompt:
        return {"prompt": redactor.text(prompt)}
    return None


def _message(message: Any, redactor: Redactor) -> dict[str, Any] | None:
    if not isinstance(message, dict):
        return None
    role, content = message.get("role"), message.get("content")
    if not isinstance(role, str) or not role:
        return None
    if isinstance(content, list):
        parts = [p for p in content if isinstance(p, dict) and p.get("type") == "text"]
        content = [{"type": "text", "text": redactor.text(str(p.get("text", "")))} for p in parts]
        return {"role": role, "content": content}
    return {"role": role, "content": redactor.text(content) if isinstance(content, str) else ""}


def _options(request: Mapping[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if isinstance(model := request.get("model"), str) and model:
        options["model"] = model
    max_tokens = request.get("max_tokens")
    if isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > 0:
        options["max_tokens"] = max_tokens
    if request.get("stream") is True:
        options["stream"] = True
    return options
