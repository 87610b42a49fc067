"""Metric providers, one module each, chosen by the provider key the spec sets under
`spec.analysis` (today `prometheus`).

Adding a provider: a module with a class taking a `Kube` and implementing `MetricProvider`
(`provider.py`), plus one line in PROVIDERS (and its field in AnalysisSpec, then `make generate`).
Each provider's presets and query language stay beside it (`presets/`, `promql_plan.py`,
`context.py` and `template.py` are Prometheus's).
"""

from __future__ import annotations

from collections.abc import Callable

from modelgate.api import AnalysisSpec
from modelgate.api.addresses import EgressPolicy
from modelgate.core.notifying import BreachEvidence
from modelgate.kube import Kube
from modelgate.metrics.prometheus import PrometheusProvider
from modelgate.metrics.provider import (
    AnalysisPlan,
    BreachExplainer,
    CountQueries,
    MetricPlan,
    MetricProvider,
)

# A provider from the kube client, the egress policy and the bearer tokens' address allowlist.
ProviderFactory = Callable[[Kube, EgressPolicy, tuple[str, ...]], MetricProvider]

PROVIDERS: dict[str, ProviderFactory] = {
    "prometheus": PrometheusProvider,
}


class MetricProviders:
    """The operator's providers, made on first use and kept (with their connections)."""

    def __init__(self, kube: Kube, egress: EgressPolicy, token_allowlist: tuple[str, ...]) -> None:
        self.kube = kube
        self.egress = egress
        self.token_allowlist = token_allowlist
        self._made: dict[str, MetricProvider] = {}

    def for_analysis(self, analysis: AnalysisSpec) -> MetricProvider:
        key = analysis.provider_key
        if key not in self._made:
            factory = PROVIDERS.get(key)
            if factory is None:
                registered = ", ".join(sorted(PROVIDERS))
                raise ValueError(
                    f"no metric provider is registered for spec.analysis.{key}; registered: {registered}"
                )
            self._made[key] = factory(self.kube, self.egress, self.token_allowlist)
        return self._made[key]


__all__ = [
    "PROVIDERS",
    "AnalysisPlan",
    "BreachEvidence",
    "BreachExplainer",
    "CountQueries",
    "MetricPlan",
    "MetricProvider",
    "MetricProviders",
    "PrometheusProvider",
]
