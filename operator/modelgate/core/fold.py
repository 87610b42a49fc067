"""Where what the rules say becomes the tick's status, pause, phase, conditions and Events: the effects
a rule or a bookkeeping step returned (core/intents.py), and the pause a Hold begins. The engine
(core/engine.py) folds them; the rules only return them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from modelgate.api import Phase
from modelgate.core.intents import (
    AskWeight,
    BeginPause,
    Effect,
    EndPause,
    Fields,
    Hold,
    Say,
    SetCondition,
    SetRouteState,
    StepNote,
)
from modelgate.core.reasons import ConditionType
from modelgate.core.tick import Tick


def fold(tick: Tick, effects: Iterable[Effect]) -> None:
    for effect in _merged(effects):
        match effect:
            case Fields(values=values):
                tick.update(**values)
            case Say(reason=reason, message=message):
                tick.event(reason, message)
            case SetCondition(type=type_, ok=ok, reason=reason, message=message):
                tick.condition(type_, ok, reason, message)
            case BeginPause(reason=reason, message=message):
                tick.pause(reason, message)
            case EndPause(reasons=reasons):
                tick.unpause(*reasons)
            case SetRouteState(state=state, message=message):
                tick.route_state(state, message)
            case AskWeight(weight=weight, even_when_held=even_when_held):
                tick.set_weight(weight, even_when_held=even_when_held)
            case StepNote(text=text):
                tick.note(text)


def _merged(effects: Iterable[Effect]) -> Iterator[Effect]:
    """The effects, with consecutive Fields as one (the later value of a field wins, as it would
    written one after the other): one status copy instead of several."""
    values: dict[str, object] = {}
    for effect in effects:
        if isinstance(effect, Fields):
            values.update(effect.values)
            continue
        if values:
            yield Fields(values)
            values = {}
        yield effect
    if values:
        yield Fields(values)


def fold_hold(tick: Tick, hold: Hold) -> None:
    """A pause the hold begins or goes on with (its `cause`: status.pause, phase Paused unless
    Pending, condition AnalysisHealthy, the Event), and the hold's message."""
    if hold.cause is not None and hold.pause is not None:
        if hold.event is not None:
            tick.events.append(hold.event)
        tick.condition(ConditionType.ANALYSIS_HEALTHY, False, hold.cause, hold.detail)
        tick.pause(hold.pause, hold.detail, hold.without_events)
        if tick.status.phase is not Phase.PENDING:
            tick.update(phase=Phase.PAUSED)
    if hold.message is not None:
        tick.update(message=hold.message)
