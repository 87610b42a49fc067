"""Structured logs (structlog: JSON in the cluster, console for people) and the operator's own
Prometheus metrics."""

from __future__ import annotations

import contextlib
import logging
import sys
from typing import Literal, TextIO

import structlog
from prometheus_client import Counter, Gauge, Histogram

from modelgate.api import ModelRolloutStatus, Phase
from modelgate.core import AnalysisRun, Decision, Outcome

LogFormat = Literal["json", "console"]
_tick_log = structlog.get_logger("modelgate.reconciler")


def configure_logging(
    log_format: LogFormat = "json", level: int = logging.INFO, stream: TextIO | None = None
) -> None:
    """Logs to `stream`, standard output unless given (a command whose output is its result logs to
    standard error); console logs are coloured only on a terminal, not in a file or a pipe. What
    logs through the standard library (kopf, the kubernetes client, warnings) renders alike."""
    out = stream or sys.stdout
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer()
        if log_format == "json"
        else structlog.dev.ConsoleRenderer(colors=out.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(level),
        # One write per line: print() writes the newline apart, and on an unbuffered stream
        # (PYTHONUNBUFFERED, as in the image) another thread's stderr line could land in between.
        logger_factory=structlog.WriteLoggerFactory(out),
        cache_logger_on_first_use=True,
    )
    _route_standard_logging()


def _route_standard_logging() -> None:
    """The standard library's records go to structlog, from the first (nothing logs before: kopf
    configures no logging when run from code); kept quieter."""
    root = logging.getLogger()
    for earlier in [h for h in root.handlers if isinstance(h, ToStructlog)]:
        root.removeHandler(earlier)  # configured again (a test): one line per record
    handler = ToStructlog()
    handler.addFilter(RetriedRequestsAreWarnings())
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.captureWarnings(True)  # a DeprecationWarning too, not a plain line on stderr


class ToStructlog(logging.Handler):
    """Hands each record to structlog: one format and one writer (one write a line) for all lines,
    whatever stream structlog writes to when the record comes."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            fields: dict[str, object] = {"logger": record.name}
            if record.exc_info:
                fields["exc_info"] = record.exc_info
            structlog.get_logger().log(record.levelno, record.getMessage(), **fields)
        except Exception:  # as logging's own handlers: a record that cannot be written is reported
            self.handleError(record)


class RetriedRequestsAreWarnings(logging.Filter):
    """kopf logs every failed attempt of a request to the API server at ERROR, also those it retries
    (`networking.error_backoffs`: for ever, here); a 429 while the API server's storage initialises,
    or a dropped connection, is then an error line in every operator's first seconds. A retried
    attempt is a warning; one kopf gives up on ("escalating") stays an error. kopf's logs carry no
    field that says which: its message does (kopf/_cogs/clients/api.py)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.ERROR and record.name.startswith("kopf."):
            message = record.getMessage()
            if message.startswith("Request attempt ") and "; escalating" not in message:
                record.levelno, record.levelname = logging.WARNING, logging.getLevelName(logging.WARNING)
        return True


_ROLLOUT = ("namespace", "rollout")
PHASES = tuple(Phase)

ROLLOUT_PHASE = Gauge(
    "modelgate_rollout_phase", "1 for the rollout's current phase, 0 for the others", [*_ROLLOUT, "phase"]
)
ROLLOUT_WEIGHT = Gauge("modelgate_rollout_candidate_weight", "Candidate traffic weight in percent", _ROLLOUT)
ROLLOUT_STEP = Gauge("modelgate_rollout_step", "Index of the current step", _ROLLOUT)
METRIC_VALUE = Gauge(
    "modelgate_analysis_metric_value", "Last value of an analysed metric", [*_ROLLOUT, "metric"]
)
NOTIFICATIONS_DELIVERED = Counter(
    "modelgate_notifications_delivered",
    "Notifications a receiver took (2xx), by receiver kind and transition",
    ["namespace", "receiver_kind", "transition"],
)
NOTIFICATIONS_FAILED = Counter(
    "modelgate_notifications_failed",
    "Notifications a receiver never took, after every retry (a NotificationFailed Event each)",
    ["namespace", "receiver_kind", "transition"],
)
METRIC_VERDICT = Counter(
    "modelgate_analysis_verdicts", "Analysis verdicts by metric and verdict", [*_ROLLOUT, "metric", "verdict"]
)
PROMOTIONS = Counter("modelgate_promotions", "Rollouts that reached Succeeded", _ROLLOUT)
# Per rollout, so one rollout ticking far more often than its interval and resyncs say stands out.
ROLLOUT_TICKS = Counter("modelgate_rollout_reconciles", "Reconcile ticks of one rollout", _ROLLOUT)
ROLLBACKS = Counter("modelgate_rollbacks", "Rollouts rolled back", [*_ROLLOUT, "reason"])
QUERY_ERRORS = Counter("modelgate_prometheus_query_errors", "Failed metric queries", _ROLLOUT)
# By the namespace whose rollout or evaluation the request served ("" for the operator's own work),
# so one tenant's request rate stands apart from another's.
API_REQUESTS = Counter(
    "modelgate_api_requests",
    "Requests the operator sent to the Kubernetes API server",
    ["verb", "namespace"],
)
METRIC_QUERIES = Counter(
    "modelgate_metric_queries", "Queries the operator sent to metric providers", ["provider"]
)
# How long the round trips that a tick waits on take: with many rollouts, the part of a tick's time
# that is not the operator's own.
_ROUND_TRIP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
API_REQUEST_SECONDS = Histogram(
    "modelgate_api_request_duration_seconds",
    "Time from sending a request to the Kubernetes API server to having its answer",
    ["verb"],
    buckets=_ROUND_TRIP_BUCKETS,
)
API_THROTTLED_SECONDS = Histogram(
    "modelgate_api_throttled_seconds",
    "Time a request to the Kubernetes API server waited for the operator's own rate limit"
    " (--api-qps, --api-burst); above 0 only when the operator asks more than its rollouts need",
    buckets=(0.001, 0.01, 0.1, 0.5, 1, 2.5, 5, 10),
)
METRIC_QUERY_SECONDS = Histogram(
    "modelgate_metric_query_duration_seconds",
    "Time one query to a metric provider took, answer or error",
    ["provider"],
    buckets=_ROUND_TRIP_BUCKETS,
)
TICK_WAIT_SECONDS = Histogram(
    "modelgate_tick_wait_seconds",
    "Time from when a tick was due to when a worker thread started it: the event loop's and the"
    " worker pool's queues. Step lag beyond this and the tick's own duration is not the operator's.",
    buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30),
)
RECONCILE_SECONDS = Histogram(
    "modelgate_reconcile_duration_seconds",
    "Time one reconcile tick took (observe, decide, apply)",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)


def export(namespace: str, name: str, decision: Decision, analysis: AnalysisRun | None) -> None:
    """One tick's results as the operator's own metrics, read from the typed decision."""
    status = decision.status
    for phase in PHASES:
        ROLLOUT_PHASE.labels(namespace, name, phase).set(1 if status.phase == phase else 0)
    ROLLOUT_WEIGHT.labels(namespace, name).set(status.current_weight)
    ROLLOUT_STEP.labels(namespace, name).set(status.current_step_index)
    if analysis is not None:
        for record in status.analysis:
            METRIC_VERDICT.labels(namespace, name, record.name, record.verdict).inc()
            if record.value is not None:
                METRIC_VALUE.labels(namespace, name, record.name).set(record.value)
        if analysis.error_count:
            QUERY_ERRORS.labels(namespace, name).inc(analysis.error_count)


def forget_rollout(namespace: str, rollout: str) -> None:
    """Drops a deleted rollout's series, so gauges do not report it forever."""
    for series in (ROLLOUT_WEIGHT, ROLLOUT_STEP, ROLLOUT_TICKS):
        _remove(series, namespace, rollout)
    for phase in PHASES:
        _remove(ROLLOUT_PHASE, namespace, rollout, phase)


# A ModelEvaluation's newest judged run, per check (docs/continuous-evaluation.md); the chart's
# ModelEvaluationRegressed alert fires on it.
EVALUATION_REGRESSED = Gauge(
    "modelgate_evaluation_regressed",
    "1 when the evaluation's newest judged run fell below the check's policy against the baseline",
    ["namespace", "evaluation", "check"],
)


def export_regressed(namespace: str, evaluation: str, checks: tuple[tuple[str, bool], ...]) -> None:
    """The evaluation's series, one per check of its newest judged run; the others' go."""
    forget_evaluation(namespace, evaluation, keep={check for check, _ in checks})
    for check, regressed in checks:
        EVALUATION_REGRESSED.labels(namespace, evaluation, check).set(1 if regressed else 0)


def forget_evaluation(namespace: str, evaluation: str, keep: set[str] | None = None) -> None:
    """Drops the evaluation's series but those of the checks in `keep`."""
    held = [sample.labels for metric in EVALUATION_REGRESSED.collect() for sample in metric.samples]
    for labels in held:
        ours = (labels["namespace"], labels["evaluation"]) == (namespace, evaluation)
        if ours and labels["check"] not in (keep or set()):
            _remove(EVALUATION_REGRESSED, namespace, evaluation, labels["check"])


def _remove(metric: Gauge | Counter, *labels: str) -> None:
    with contextlib.suppress(KeyError):
        metric.remove(*labels)


def log_changes(before: ModelRolloutStatus, status: ModelRolloutStatus) -> None:
    """After a tick's status is written: the phase or message changed (what an operator's log
    follows; logged as the reconciler's)."""
    if status.phase != before.phase:
        _tick_log.info("phase changed", phase=status.phase, previous=before.phase, message=status.message)
    elif status.message != before.message:
        # What it now waits for (a candidate that is not Available, a weight not yet live): a
        # rollout that holds would otherwise say so only in its status.
        _tick_log.info("status message changed", phase=status.phase, message=status.message)


def record_ending(
    namespace: str, name: str, before: ModelRolloutStatus, status: ModelRolloutStatus, outcome: Outcome
) -> None:
    """The rollout reached `outcome` (core.RecordEnding): counted, and logged with its breach."""
    if outcome.phase is Phase.SUCCEEDED:
        PROMOTIONS.labels(namespace, name).inc()
    elif outcome.phase is Phase.ROLLED_BACK:
        ROLLBACKS.labels(namespace, name, outcome.reason.value).inc()
    reason = status.rollback_reason
    # A promotion is the expected end: info; a rollback or failure is what operators alert on.
    ended = _tick_log.info if outcome.phase == Phase.SUCCEEDED else _tick_log.warning
    ended(
        "rollout ended",
        phase=outcome.phase,
        reason=outcome.reason.value,
        metric=reason.metric if reason else None,
        value=reason.value if reason else None,
        threshold=reason.threshold if reason else None,
        query=reason.query if reason else None,
        detail=status.message,
        step=before.current_step_index,
        weight_before=before.current_weight,
    )
