"""What the operator process is told by its flags and environment, read once by `modelgate run`
(cli/run.py) and passed down: no module below the CLI reads the environment, and the egress policy,
whose API server addresses take DNS lookups, is built once. The defaults are an empty
environment's."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from modelgate.api.addresses import EgressPolicy
from modelgate.kube.check_pod_policy import CheckPodPolicy
from modelgate.notifications import NotificationDefaults


@dataclass(frozen=True)
class OperatorConfig:
    # Every address the operator and its evaluator Jobs connect to is held to this.
    egress: EgressPolicy = field(default_factory=EgressPolicy)
    # Addresses any Secret's bearer token may be sent to, besides its own annotation's.
    token_allowlist: tuple[str, ...] = ()
    evaluator_image: str | None = None  # the gate's evaluator Jobs' image
    # What those Jobs hold to (egress.evaluator_environment); None: the API server's URL alone.
    evaluator_env: Mapping[str, str] | None = None
    check_pod_policy: CheckPodPolicy = field(default_factory=CheckPodPolicy)
    notification_defaults: NotificationDefaults = field(default_factory=NotificationDefaults)
