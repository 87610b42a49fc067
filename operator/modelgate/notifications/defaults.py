"""The operator's default notifications (the chart's notifications.defaults): the receivers and
transitions of every ModelRollout that sets no spec.notifications. A rollout's own spec.notifications
wins whole (`receivers: []` turns the defaults off for it). The defaults' Secrets are read in the
operator's namespace, a rollout's own in the rollout's namespace only."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from modelgate.api import ModelRolloutSpec
from modelgate.api.notifications import NotificationsSpec
from modelgate.notifications.delivery import Target

DEFAULTS_ENV = "MODELGATE_NOTIFICATIONS"  # a NotificationsSpec as JSON
NAMESPACE_ENV = "MODELGATE_NAMESPACE"  # the operator's own (the chart sets it from the Pod)


@dataclass(frozen=True)
class NotificationDefaults:
    spec: NotificationsSpec | None = None
    namespace: str = ""

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> NotificationDefaults:
        """Raises ValueError naming the setting when it is not a valid notifications object."""
        text = (environ.get(DEFAULTS_ENV) or "").strip()
        if not text:
            return cls()
        namespace = environ.get(NAMESPACE_ENV, "")
        try:
            spec = NotificationsSpec.model_validate(json.loads(text))
        except (json.JSONDecodeError, ValidationError) as error:
            raise ValueError(f"${DEFAULTS_ENV} is not a valid notifications object: {error}") from None
        if spec.receivers and not namespace:
            raise ValueError(
                f"${DEFAULTS_ENV} names receivers: ${NAMESPACE_ENV} must name their Secrets' namespace"
            )
        return cls(spec, namespace)

    def applied(self, spec: ModelRolloutSpec) -> ModelRolloutSpec:
        """`spec` with the defaults, unless it has notifications of its own."""
        if spec.notifications is not None or self.spec is None:
            return spec
        return spec.model_copy(update={"notifications": self.spec})

    def targets(self, body: Mapping[str, Any], spec: ModelRolloutSpec) -> tuple[Target, ...]:
        """Where a Notify of the rollout `body` (its `spec` with the defaults applied) goes."""
        if spec.notifications is None:
            return ()
        # The rollout's own (or its policy's, resolved into `spec`): not the object `applied` put in.
        own = spec.notifications is not self.spec
        namespace = body["metadata"]["namespace"] if own else self.namespace
        return tuple(Target(receiver, namespace, not own) for receiver in spec.notifications.receivers)
