"""What the operator lets a gate check's Pod be, as the chart configures it.

What the operator lets a gate check's Pod be, as the chart configures it (environment variables
of the operator's container): which custom images may run, the ServiceAccount the Pods run as, and
their resources, filled from defaults and held under maxima. Pure: no client calls."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from modelgate.api.check_job import CheckResources, ComputeAmounts
from modelgate.api.fields import QUANTITY_PATTERN

# A JSON list of regular expressions; an image must match one in full. Unset: custom images refused.
CUSTOM_IMAGES_ENV = "MODELGATE_CHECK_IMAGES"
# The ServiceAccount of check Pods in each namespace; unset: the namespace's `default`. Either way
# no token is mounted.
SERVICE_ACCOUNT_ENV = "MODELGATE_CHECK_SERVICE_ACCOUNT"
# JSON {"requests": {"cpu":…, "memory":…}, "limits": {…}, "max": {…}}: defaults and maxima.
RESOURCES_ENV = "MODELGATE_CHECK_RESOURCES"

KINDS = ("cpu", "memory")
DEFAULT_REQUESTS = {"cpu": "100m", "memory": "128Mi"}
DEFAULT_LIMITS = {"cpu": "1", "memory": "1Gi"}
DEFAULT_MAXIMA = {"cpu": "4", "memory": "8Gi"}
_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "m": Decimal("0.001"),
    **{s: Decimal(1000**i) for i, s in enumerate("kMGTPE", 1)},
    **{f"{s}i": Decimal(1024**i) for i, s in enumerate("KMGTPE", 1)},
}


def quantity(text: str) -> Decimal:
    """The amount a Kubernetes quantity (as QUANTITY_PATTERN admits it) stands for."""
    match = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)([a-zA-Z]*)", text)
    if match is None or not re.fullmatch(QUANTITY_PATTERN, text):
        raise ValueError(f"{text!r} is not a quantity such as 500m, 2 or 512Mi")
    return Decimal(match[1]) * _SUFFIXES[match[2]]


@dataclass(frozen=True)
class CheckPodPolicy:
    custom_images: tuple[str, ...] | None = None  # None: no custom image may run
    service_account: str | None = None
    requests: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_REQUESTS))
    limits: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_LIMITS))
    maxima: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_MAXIMA))

    def image_problem(self, image: str, field_path: str) -> str | None:
        """Why a custom check may not run `image`, naming the field; None when it may."""
        if self.custom_images is None:
            return f"{field_path}: this operator runs no custom check images (the chart's gate.customImages)"
        if any(re.fullmatch(pattern, image) for pattern in self.custom_images):
            return None
        allowed = ", ".join(self.custom_images) or "none"
        return f"{field_path}: image {image!r} is not in the operator's allowlist (patterns: {allowed})"

    def resources(self, wanted: CheckResources, field_path: str) -> dict[str, dict[str, str]] | str:
        """The container's requests and limits, or why the check's own are refused, naming the field."""
        limits = self._filled(wanted.limits, self._capped(self.limits))
        for kind, value in limits.items():
            if quantity(value) > quantity(self.maxima[kind]):
                maximum = self.maxima[kind]
                return f"{field_path}.limits.{kind}: {value} is over the operator's maximum {maximum}"
        default_requests = {kind: min(self.requests[kind], limits[kind], key=quantity) for kind in KINDS}
        requests = self._filled(wanted.requests, default_requests)
        for kind, value in requests.items():
            if quantity(value) > quantity(limits[kind]):
                return f"{field_path}.requests.{kind}: {value} is more than the limit {limits[kind]}"
        return {"requests": requests, "limits": limits}

    def _capped(self, amounts: Mapping[str, str]) -> dict[str, str]:
        return {kind: min(amounts[kind], self.maxima[kind], key=quantity) for kind in KINDS}

    @staticmethod
    def _filled(wanted: ComputeAmounts, defaults: Mapping[str, str]) -> dict[str, str]:
        given = {"cpu": wanted.cpu, "memory": wanted.memory}
        return {kind: given[kind] or defaults[kind] for kind in KINDS}

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> CheckPodPolicy:
        """The policy the chart sets; a malformed variable raises, naming it."""
        images = environ.get(CUSTOM_IMAGES_ENV)
        resources: dict[str, Any] = _json(environ, RESOURCES_ENV, {})
        policy = cls(
            custom_images=None if images is None else tuple(_patterns(_json(environ, CUSTOM_IMAGES_ENV, []))),
            service_account=environ.get(SERVICE_ACCOUNT_ENV) or None,
            requests={**DEFAULT_REQUESTS, **_amounts(resources, "requests")},
            limits={**DEFAULT_LIMITS, **_amounts(resources, "limits")},
            maxima={**DEFAULT_MAXIMA, **_amounts(resources, "max")},
        )
        for amounts in (policy.requests, policy.limits, policy.maxima):
            for value in amounts.values():
                try:
                    quantity(value)
                except ValueError as error:
                    raise ValueError(f"${RESOURCES_ENV}: {error}") from None
        return policy


def _json(environ: Mapping[str, str], name: str, empty: Any) -> Any:
    text = environ.get(name)
    if not text:
        return empty
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"${name} is not JSON: {error}") from None
    if not isinstance(value, type(empty)):
        raise ValueError(f"${name} must be a JSON {type(empty).__name__}")
    return value


def _amounts(resources: Mapping[str, Any], key: str) -> dict[str, str]:
    """cpu and memory of one entry; YAML may have made a number of `cpu: 1`."""
    given = resources.get(key) or {}
    return {kind: str(given[kind]) for kind in KINDS if kind in given}


def _patterns(patterns: list[Any]) -> list[str]:
    for pattern in patterns:
        try:
            re.compile(str(pattern))
        except re.error as error:
            problem = f"{pattern!r} is not a regular expression: {error}"
            raise ValueError(f"${CUSTOM_IMAGES_ENV}: {problem}") from None
    return [str(p) for p in patterns]
