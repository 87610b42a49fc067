"""A gate check's object storage: results' locations, Secrets by reference, result pointers.

A gate check's object storage (docs/object-storage.md): where the evaluator keeps a check's full
results, the variables that take each storage Secret's values by reference, the fields that name
those Secrets, and the pointers to results the operator keeps. Pure: no client calls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelgate.api.gate import Evaluator, GateCheck
from modelgate.api.gate_result import StoredData
from modelgate.api.object_storage import ROLE_PREFIXES, GateResults, secret_environment
from modelgate.api.object_url import ObjectUrlError, parse_object_url, parse_prefix_url, results_location
from modelgate.api.recorded_requests import RecordedRequests
from modelgate.core.gate_judgement import CheckMeasured


@dataclass(frozen=True)
class ResultsTarget:
    """Where the evaluator writes a check's full results (spec.gate.results, a ModelEvaluation's
    spec.results: `field`): the check's own location (api/object_url.py's results_location) and the
    Secret that reaches it."""

    location: str
    secret: str
    field: str = "spec.gate.results"


def results_target(
    results: GateResults | None, check: GateCheck, owner: tuple[str, str], run: str, field: str
) -> ResultsTarget | None:
    """Where the built-in evaluator writes `check`'s full results in one run of its owner
    (namespace, name: a rollout's gate or a ModelEvaluation), if `results` (at `field`) keeps them."""
    if results is None or check.evaluator is None:
        return None
    namespace, name = owner
    location = results_location(parse_prefix_url(results.s3.url), namespace, name, run, check.name)
    return ResultsTarget(str(location), results.s3.secret, field)


def stored_locations(
    check: GateCheck, field: str, results: ResultsTarget | None
) -> dict[StoredData, tuple[str, str]]:
    """For each stored input or output of `check` (at `field`): the field of its S3 location in the
    spec and the Secret that reaches it, e.g. TEST_SET: (`spec.gate.checks[0].evaluator.testSet.s3`,
    `sets`)."""
    evaluator = check.evaluator
    located: dict[StoredData, tuple[str, str]] = {}
    if evaluator is not None:
        named = [(StoredData.TEST_SET, evaluator.test_set), (StoredData.REPLAY, evaluator.replay)]
        for data, source in named:
            if source is not None and source.s3 is not None:
                located[data] = (f"{field}.evaluator.{data.value}.s3", source.s3.secret)
        recorded = recorded_replay(evaluator)
        if recorded is not None:
            located[StoredData.RECORDED] = (f"{field}.evaluator.replay.recorded.s3", recorded.s3.secret)
    if results is not None:
        located[StoredData.RESULTS] = (f"{results.field}.s3", results.secret)
    return located


def storage_secret_fields(check: GateCheck, field: str, results: ResultsTarget | None) -> list[str]:
    """The fields of the spec that name the storage Secrets a check's evaluator reads (the check at
    `field`), with their names, e.g. `spec.gate.checks[0].evaluator.testSet.s3.secret (sets)`."""
    return [f"{at}.secret ({secret})" for at, secret in stored_locations(check, field, results).values()]


def stored_url_fields(check: GateCheck, field: str, results: ResultsTarget | None) -> dict[StoredData, str]:
    """The field of each stored input's or output's URL, e.g.
    `spec.gate.checks[0].evaluator.testSet.s3.url`."""
    return {data: f"{at}.url" for data, (at, _) in stored_locations(check, field, results).items()}


def storage_wiring(
    evaluator: Evaluator, results: ResultsTarget | None
) -> tuple[list[str], list[dict[str, Any]]]:
    """The evaluator's --results argument, and the variables that take each storage Secret's values
    (by `secretKeyRef`: the operator never reads them)."""
    stored = [("--test-set", evaluator.test_set), ("--replay", evaluator.replay)]
    secrets = [(option, source.s3.secret) for option, source in stored if source is not None and source.s3]
    args = []
    recorded = recorded_replay(evaluator)
    if recorded is not None:  # the replay's Secret: --replay-recorded reads with --replay's variables
        args += [f"--replay-recorded={recorded.s3.url}", f"--replay-last={recorded.last}"]
        secrets.append(("--replay", recorded.s3.secret))
    if results is not None:
        args.append(f"--results={results.location}")
        secrets.append(("--results", results.secret))
    env = [entry for option, secret in secrets for entry in secret_environment(ROLE_PREFIXES[option], secret)]
    return args, env


def recorded_replay(evaluator: Evaluator | None) -> RecordedRequests | None:
    """The recorded requests a check replays (a prefix the evaluator lists), if it names them."""
    return None if evaluator is None or evaluator.replay is None else evaluator.replay.recorded


def own_pointer_only(seen: CheckMeasured, results: ResultsTarget | None) -> CheckMeasured:
    """The result without pointers to results outside the check's own location (a check cannot
    make the status point at another team's objects)."""
    own = tuple(url for url in seen.results_urls if results is not None and _below(url, results.location))
    return seen if own == seen.results_urls else CheckMeasured(seen.result, own)


def _below(url: str, location: str) -> bool:
    try:
        return str(parse_object_url(url)).startswith(location + "/")
    except ObjectUrlError:
        return False
