"""`modelgate run` with a fault that a test arms: while the file named by FAULT_FILE_ENV holds a
stage's name (observe, decide or apply), every ordinary tick raises InjectedFault at that stage. The
fail-safe that follows is left alone: it runs outside Reconciler._tick. Nothing of this is in the
shipped operator; the operator process is started from this entry point (OperatorProcess(entry=...)).
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from modelgate import reconciler
from modelgate.cli.main import main as modelgate_main
from modelgate.reconciler import Reconciler
from modelgate.tick_observation import TickObserver

ENTRY = f"{__name__}:main"
FAULT_FILE_ENV = "MODELGATE_TEST_FAULT_FILE"
Call = TypeVar("Call", bound=Callable[..., Any])
_in_tick = threading.local()


class InjectedFault(Exception):
    """What an armed stage raises."""


def _armed(stage: str) -> bool:
    fault = Path(os.environ[FAULT_FILE_ENV])
    return getattr(_in_tick, "active", False) and fault.exists() and fault.read_text().strip() == stage


def _raising_at(stage: str, call: Call) -> Call:
    @functools.wraps(call)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        if _armed(stage):
            raise InjectedFault(f"injected into the tick's {stage} stage")
        return call(*args, **kwargs)

    return wrapped  # type: ignore[return-value]


def _marking_ticks(call: Call) -> Call:
    @functools.wraps(call)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        _in_tick.active = True
        try:
            return call(*args, **kwargs)
        finally:
            _in_tick.active = False

    return wrapped  # type: ignore[return-value]


def install() -> None:
    Reconciler._tick = _marking_ticks(Reconciler._tick)  # type: ignore[method-assign]
    TickObserver.observe = _raising_at("observe", TickObserver.observe)  # type: ignore[method-assign]
    reconciler.decide = _raising_at("decide", reconciler.decide)
    Reconciler._apply_actions = _raising_at("apply", Reconciler._apply_actions)  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    install()
    return modelgate_main(argv)
