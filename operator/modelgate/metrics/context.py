"""The validated values that may appear inside a PromQL query.

Every string a rollout spec contributes to a query passes through `QueryContext`, and each is
checked against a character set that cannot close a PromQL string literal or a label selector
(no quotes, backticks, braces, backslashes or newlines). That check, not escaping, is what keeps
a spec from injecting PromQL: presets and user templates only ever receive these values. The one
value read from the cluster instead, an InferencePool's endpoint picker, is escaped where a preset
places it (`label_matcher`).

The range window (`interval`) is the analysis interval, but never shorter than `min_window`
(default 1m). `rate()` needs at least two samples inside its range, and Prometheus advises a
range of at least four scrape intervals; with the common 15s scrape interval, an analysis
interval of 30s would otherwise produce empty or jumpy rates.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from modelgate.api.duration import parse_duration
from modelgate.kube.pools import PoolPod

Side = Literal["candidate", "incumbent"]

DEFAULT_MIN_WINDOW = "1m"

# All patterns are used with fullmatch: `$` would also accept a trailing newline.
# Namespaces are DNS-1123 labels; Deployment names are DNS-1123 subdomains.
_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
# Regex syntax without quotes, backticks, braces or backslashes: enough for pod-name patterns.
_SAFE_REGEX = re.compile(r"[A-Za-z0-9._*+?|()\[\]^$-]+")
_MAX_REGEX_LENGTH = 256
# A Pod name's family: the name up to its last `-` (chat-v2-extra- for chat-v2-extra-17).
_FAMILY = re.compile(r"(?P<prefix>.+-)[a-z0-9]+")
# Model names as gateways report them (meta-llama/Llama-3.1-8B-Instruct); no quotes or braces.
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/-]*")


class QueryContextError(ValueError):
    """A value that is not allowed inside a PromQL query."""


def default_pod_regex(deployment: str) -> str:
    """Pods of a Deployment are named `<deployment>-<pod-template-hash>-<suffix>`.

    Matching exactly those two trailing segments (PromQL anchors regexes) keeps `chat` from also
    matching the pods of `chat-v2`, which `chat-.*` would.
    """
    return f"{deployment}-[a-z0-9]+-[a-z0-9]+"


def pool_pod_regex(
    pool: str, pods: Sequence[PoolPod] | None, others: Collection[str] = (), *, kind: str = "InferencePool"
) -> str:
    """The Pods an InferencePool selects, for a side whose podRegex is not set, by the shapes of their
    names, so that the pattern grows with the kinds of Pods, not with their number: each owner's
    generateName prefix followed by `[a-z0-9]+` (a ReplicaSet's Pods keep matching as they come and
    go); Pods named without one (by hand, a StatefulSet's) that share their name up to its last `-`,
    that prefix followed by `[a-z0-9]+`, unless it would also match one of `others` (the other side's
    Pods); any other Pod by its name. A pool that selects no Pods, or does not exist, gets a pattern
    no Pod name can match (Pod names are lowercase), which says why in the query. `kind`: of the
    object that selects them (a workload read through its scale subresource, too)."""
    if not pods:
        return f"{kind}_{pool}_selects_no_Pods"
    prefixes = sorted({f"{_literal(pod.generate_name)}[a-z0-9]+" for pod in pods if pod.generate_name})
    named = sorted(pod.name for pod in pods if not pod.generate_name)
    alternatives = [*prefixes, *_by_family(named, others)]
    return alternatives[0] if len(alternatives) == 1 else f"({'|'.join(alternatives)})"


def named_pods_regex(what: str, names: Sequence[str]) -> str:
    """Pods listed by name (a group member's that is not a Deployment), by family as pool_pod_regex
    does; none: a pattern no Pod name can match, which says why in the query."""
    if not names:
        return f"{what}_has_no_Pods"
    alternatives = _by_family(sorted(names), ())
    return alternatives[0] if len(alternatives) == 1 else f"({'|'.join(alternatives)})"


def _by_family(names: Sequence[str], others: Collection[str]) -> list[str]:
    families: dict[str, list[str]] = {}
    for name in names:
        family = _FAMILY.fullmatch(name)
        families.setdefault(family["prefix"] if family else name, []).append(name)
    alternatives = []
    for prefix, members in families.items():
        pattern = f"{_literal(prefix)}[a-z0-9]+"
        if len(members) > 1 and not any(re.fullmatch(pattern, other) for other in others):
            alternatives.append(pattern)
        else:
            alternatives.extend(_literal(name) for name in members)
    return alternatives


def _literal(name: str) -> str:
    # `[.]`, not `\.`: backslashes are not allowed in a pod regex (a dot is rare in Pod names).
    return name.replace(".", "[.]")


def promql_window(interval: timedelta) -> str:
    """A PromQL range duration (whole units only: PromQL rejects `1.5m`)."""
    milliseconds = round(interval.total_seconds() * 1000)
    return f"{milliseconds // 1000}s" if milliseconds % 1000 == 0 else f"{milliseconds}ms"


@dataclass(frozen=True)
class QueryContext:
    """Validated query inputs; constructing one with an unsafe value raises QueryContextError."""

    namespace: str
    incumbent_deployment: str
    candidate_deployment: str
    incumbent_pod_regex: str
    candidate_pod_regex: str
    interval: str  # the PromQL range window, e.g. "1m"
    # The model names a gateway reports each side's requests under; empty means the Deployment's name.
    incumbent_model: str = ""
    candidate_model: str = ""
    # The Gateway API routes (`httproute/NAME`, `grpcroute/NAME`) and backendRef names that carry each
    # side's traffic, for sources that count it at the gateway; empty without gatewayAPI routing.
    gateway_routes: tuple[str, ...] = ()
    incumbent_backend: str = ""
    candidate_backend: str = ""
    # The sides are two adapters of one InferencePool (spec.*.adapter): the same Pods serve both.
    adapters: bool = False
    # The endpoint picker Service of each InferencePool side (its spec.endpointPickerRef), or why it
    # has none; empty for a Deployment side. From the cluster, not the spec: escaped, not checked.
    incumbent_picker: str = ""
    candidate_picker: str = ""
    # Each side's accelerators (spec.analysis.accelerators' count, or what its Ready Pods request) and
    # price per accelerator-hour (None: not set), for the goodput and cost presets.
    incumbent_accelerators: float = 0.0
    candidate_accelerators: float = 0.0
    incumbent_price: float | None = None
    candidate_price: float | None = None

    def __post_init__(self) -> None:
        _check_namespace(self.namespace)
        _check_deployment("incumbent", self.incumbent_deployment)
        _check_deployment("candidate", self.candidate_deployment)
        _check_pod_regex("incumbent", self.incumbent_pod_regex)
        _check_pod_regex("candidate", self.candidate_pod_regex)
        _check_model("incumbent", self.model("incumbent"))
        _check_model("candidate", self.model("candidate"))
        for route in self.gateway_routes:
            _check_gateway_route(route)
        for side in ("incumbent", "candidate"):
            _check_backend(side, self.backend(side))
            _check_amount(f"{side} accelerators", self.accelerators(side))
            _check_amount(f"{side} price per accelerator-hour", self.price(side))
        try:
            positive = parse_duration(self.interval) > timedelta()
        except ValueError as error:
            raise QueryContextError(str(error)) from None
        if not positive:
            raise QueryContextError(f"interval {self.interval!r} must be longer than zero")

    @classmethod
    def for_rollout(
        cls,
        namespace: str,
        incumbent_deployment: str,
        candidate_deployment: str,
        analysis_interval: str,
        *,
        incumbent_pod_regex: str | None = None,
        candidate_pod_regex: str | None = None,
        incumbent_model: str | None = None,
        candidate_model: str | None = None,
        gateway_routes: tuple[str, ...] = (),
        backends: tuple[str, str] = ("", ""),
        adapters: bool = False,
        pickers: tuple[str, str] = ("", ""),
        accelerators: tuple[float, float] = (0.0, 0.0),
        prices: tuple[float | None, float | None] = (None, None),
        min_window: str = DEFAULT_MIN_WINDOW,
    ) -> QueryContext:
        """Build the context from spec values: default pod regexes, window = max(interval, min_window)."""
        try:
            window = max(analysis_interval, min_window, key=parse_duration)
        except ValueError as error:
            raise QueryContextError(str(error)) from None
        if "." in window:  # PromQL takes whole units only
            window = promql_window(parse_duration(window))
        return cls(
            namespace=namespace,
            incumbent_deployment=incumbent_deployment,
            candidate_deployment=candidate_deployment,
            incumbent_pod_regex=_or_default(incumbent_pod_regex, incumbent_deployment),
            candidate_pod_regex=_or_default(candidate_pod_regex, candidate_deployment),
            interval=window,
            incumbent_model=incumbent_model or "",
            candidate_model=candidate_model or "",
            gateway_routes=gateway_routes,
            incumbent_backend=backends[0],
            candidate_backend=backends[1],
            adapters=adapters,
            incumbent_picker=pickers[0],
            candidate_picker=pickers[1],
            incumbent_accelerators=accelerators[0],
            candidate_accelerators=accelerators[1],
            incumbent_price=prices[0],
            candidate_price=prices[1],
        )

    def pod_regex(self, side: Side) -> str:
        return self.candidate_pod_regex if side == "candidate" else self.incumbent_pod_regex

    def deployment(self, side: Side) -> str:
        return self.candidate_deployment if side == "candidate" else self.incumbent_deployment

    def model(self, side: Side) -> str:
        model = self.candidate_model if side == "candidate" else self.incumbent_model
        return model or self.deployment(side)

    def picker(self, side: Side) -> str:
        """The endpoint picker Service in front of the side's pool ("" for a Deployment side)."""
        return self.candidate_picker if side == "candidate" else self.incumbent_picker

    def accelerators(self, side: Side) -> float:
        return self.candidate_accelerators if side == "candidate" else self.incumbent_accelerators

    def price(self, side: Side) -> float | None:
        return self.candidate_price if side == "candidate" else self.incumbent_price

    def backend(self, side: Side) -> str:
        """The backendRef name reaching the side ("" without gatewayAPI routing)."""
        return self.candidate_backend if side == "candidate" else self.incumbent_backend


def _or_default(pod_regex: str | None, deployment: str) -> str:
    # Only None means "not set": an empty regex from a spec is a mistake and fails validation.
    return default_pod_regex(deployment) if pod_regex is None else pod_regex


def _check_namespace(namespace: str) -> None:
    if len(namespace) > 63 or not _DNS1123_LABEL.fullmatch(namespace):
        raise QueryContextError(f"namespace {namespace!r} is not a valid Kubernetes namespace name")


def _check_deployment(side: Side, name: str) -> None:
    if len(name) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(name):
        raise QueryContextError(f"{side} deployment {name!r} is not a valid Kubernetes name (DNS-1123)")


def _check_model(side: Side, model: str) -> None:
    if len(model) > 253 or not _MODEL_NAME.fullmatch(model):
        raise QueryContextError(
            f"{side} model {model!r} is not allowed: use at most 253 characters from letters, digits "
            "and . _ : / -, starting with a letter or digit"
        )


def _check_pod_regex(side: Side, regex: str) -> None:
    if len(regex) > _MAX_REGEX_LENGTH or not _SAFE_REGEX.fullmatch(regex):
        raise QueryContextError(
            f"{side} pod regex {regex!r} is not allowed: use at most {_MAX_REGEX_LENGTH} characters "
            "from letters, digits and . _ * + ? | ( ) [ ] ^ $ -"
        )
    try:
        with warnings.catch_warnings():
            # Prometheus reads the regex (RE2): Python's warning that it may one day read `[[` as a
            # nested set is not about this regex's meaning there.
            warnings.simplefilter("ignore", FutureWarning)
            re.compile(regex)
    except re.error as exc:  # catch e.g. unbalanced parentheses here, not as a PromQL error later
        raise QueryContextError(f"{side} pod regex {regex!r} does not compile: {exc}") from None


def _check_gateway_route(route: str) -> None:
    kind, _, name = route.partition("/")
    if kind not in ("httproute", "grpcroute") or len(name) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(name):
        raise QueryContextError(f"gateway route {route!r} is not httproute/NAME or grpcroute/NAME (DNS-1123)")


def _check_amount(what: str, amount: float | None) -> None:
    if amount is not None and not (math.isfinite(amount) and amount >= 0):
        raise QueryContextError(f"{what} {amount!r} is not a finite number of at least 0")


def label_matcher(label: str, value: str) -> str:
    """`label="value"`, the value escaped as a PromQL string literal (backslash, quote, newline)."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'{label}="{escaped}"'


def promql_number(value: float) -> str:
    """A number as PromQL reads it back exactly (Python's shortest round-tripping repr)."""
    return repr(float(value))


def _check_backend(side: Side, name: str) -> None:
    if name and (len(name) > 253 or not _DNS1123_SUBDOMAIN.fullmatch(name)):
        raise QueryContextError(f"{side} backend {name!r} is not a valid Kubernetes name (DNS-1123)")
