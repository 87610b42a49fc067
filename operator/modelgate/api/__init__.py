"""Pydantic models of the ModelRollout custom resource (spec and status), with camelCase aliases; no I/O."""

from modelgate.api.accelerators import AcceleratorSpec, SideAccelerators
from modelgate.api.analysis import (
    LATENCY_PRESETS,
    LATENCY_QUANTILES,
    PER_ACCELERATOR_PRESETS,
    RATE_PRESETS,
    AnalysisSpec,
    MetricPreset,
    MetricSource,
    MetricSpec,
    PrometheusSpec,
    SecretKeyRef,
)
from modelgate.api.duration import parse_duration
from modelgate.api.errors import FieldPathError, InvalidSpecError
from modelgate.api.istio_routing import IstioDestination, IstioRouting, VirtualServiceRef
from modelgate.api.metric_status import (
    AnalysisSample,
    ConfidenceBounds,
    CounterTotals,
    MetricAnalysis,
    SequentialEvidence,
)
from modelgate.api.pause import PauseReason, RolloutPause
from modelgate.api.progress_deadlines import Deadline, ProgressDeadlines
from modelgate.api.quantile_status import BucketReading, QuantileBounds, QuantileEvidence
from modelgate.api.rollback_policy import OnPrometheusError, RollbackSpec
from modelgate.api.rollback_reason import BreachRule, BreachTrace, PodValue, RollbackReason
from modelgate.api.route_claim import RolloutRef
from modelgate.api.route_state import RouteState
from modelgate.api.safety import CapacitySpec, GradualRollback, OnDelete
from modelgate.api.spec import ModelRolloutSpec, parse_spec
from modelgate.api.statistical_tests import Comparison, Confidence, SequentialTest
from modelgate.api.status import (
    CommandResult,
    Condition,
    ConditionStatus,
    EarlierRollout,
    FalseRollbackWarning,
    LastCommand,
    ModelRolloutStatus,
    Phase,
    RollingBack,
    parse_status,
)
from modelgate.api.statusmodel import Timestamp, Verdict
from modelgate.api.steps import Mirror, Pause, Step
from modelgate.api.traffic_routing import GatewayAPIRouting, GatewayRouteRef, TrafficRouting
from modelgate.api.watch import WatchSpec
from modelgate.api.workload_ref import BackendKind, WorkloadRef

__all__ = [
    "LATENCY_PRESETS",
    "LATENCY_QUANTILES",
    "PER_ACCELERATOR_PRESETS",
    "RATE_PRESETS",
    "AcceleratorSpec",
    "AnalysisSample",
    "AnalysisSpec",
    "BackendKind",
    "BreachRule",
    "BreachTrace",
    "BucketReading",
    "CapacitySpec",
    "CommandResult",
    "Comparison",
    "Condition",
    "ConditionStatus",
    "Confidence",
    "ConfidenceBounds",
    "CounterTotals",
    "Deadline",
    "EarlierRollout",
    "FalseRollbackWarning",
    "FieldPathError",
    "GatewayAPIRouting",
    "GatewayRouteRef",
    "GradualRollback",
    "InvalidSpecError",
    "IstioDestination",
    "IstioRouting",
    "LastCommand",
    "MetricAnalysis",
    "MetricPreset",
    "MetricSource",
    "MetricSpec",
    "Mirror",
    "ModelRolloutSpec",
    "ModelRolloutStatus",
    "OnDelete",
    "OnPrometheusError",
    "Pause",
    "PauseReason",
    "Phase",
    "PodValue",
    "ProgressDeadlines",
    "PrometheusSpec",
    "QuantileBounds",
    "QuantileEvidence",
    "RollbackReason",
    "RollbackSpec",
    "RollingBack",
    "RolloutPause",
    "RolloutRef",
    "RouteState",
    "SecretKeyRef",
    "SequentialEvidence",
    "SequentialTest",
    "SideAccelerators",
    "Step",
    "Timestamp",
    "TrafficRouting",
    "Verdict",
    "VirtualServiceRef",
    "WatchSpec",
    "WorkloadRef",
    "parse_duration",
    "parse_spec",
    "parse_status",
]
