"""What the operator lets a check Pod be (kube/check_pod_policy.py): custom images by allowlist,
resources filled from defaults and refused over the maxima, each refusal naming the field."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from modelgate.api.check_job import CheckResources
from modelgate.kube.check_pod_policy import (
    CUSTOM_IMAGES_ENV,
    RESOURCES_ENV,
    SERVICE_ACCOUNT_ENV,
    CheckPodPolicy,
    quantity,
)
from modelgate.kube.labels import MAX_LABEL_VALUE, label_value

FIELD = "spec.gate.checks[1].resources"
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def resources(**wanted: Any) -> CheckResources:
    return CheckResources.model_validate(wanted)


def test_custom_images_are_refused_unless_the_operator_allows_them() -> None:
    field = "spec.gate.checks[0].job.image"
    refused = CheckPodPolicy().image_problem("ghcr.io/team/check:1", field)
    assert refused is not None and refused.startswith(field)
    allowlisted = CheckPodPolicy(custom_images=(r"ghcr\.io/team/.*",))
    assert allowlisted.image_problem("ghcr.io/team/check:1", field) is None
    # A full match, not a search: the allowed name inside another registry's path is refused.
    problem = allowlisted.image_problem("evil.example/ghcr.io/team/check:1", field)
    assert problem is not None and problem.startswith(field)


def test_unset_resources_take_the_defaults_and_requests_never_exceed_limits() -> None:
    policy = CheckPodPolicy(requests={"cpu": "2", "memory": "128Mi"}, limits={"cpu": "1", "memory": "1Gi"})
    given = policy.resources(resources(limits={"memory": "256Mi"}), FIELD)
    assert not isinstance(given, str)
    assert given["limits"] == {"cpu": "1", "memory": "256Mi"}
    assert quantity(given["requests"]["cpu"]) <= quantity(given["limits"]["cpu"])
    assert given["requests"]["memory"] == "128Mi"


@pytest.mark.parametrize(
    ("wanted", "field"),
    [
        ({"limits": {"cpu": "5"}}, f"{FIELD}.limits.cpu"),
        ({"limits": {"memory": "9Gi"}}, f"{FIELD}.limits.memory"),
        ({"requests": {"memory": "2Gi"}, "limits": {"memory": "1Gi"}}, f"{FIELD}.requests.memory"),
        ({"requests": {"cpu": "5"}}, f"{FIELD}.requests.cpu"),
    ],
)
def test_over_the_maximum_is_refused_naming_the_field(wanted: dict[str, Any], field: str) -> None:
    policy = CheckPodPolicy(maxima={"cpu": "4", "memory": "8Gi"})
    problem = policy.resources(resources(**wanted), FIELD)
    assert isinstance(problem, str) and problem.startswith(field)


def test_defaults_above_the_maximum_are_capped_to_it() -> None:
    policy = CheckPodPolicy(limits={"cpu": "8", "memory": "1Gi"}, maxima={"cpu": "500m", "memory": "8Gi"})
    given = policy.resources(resources(), FIELD)
    assert not isinstance(given, str) and quantity(given["limits"]["cpu"]) == quantity("500m")


def test_quantities_compare_by_amount() -> None:
    assert quantity("1500m") == quantity("1.5") and quantity("1Gi") == 1024**3
    assert quantity("1G") < quantity("1Gi")


def test_the_policy_is_read_from_the_charts_environment() -> None:
    policy = CheckPodPolicy.from_env(
        {
            CUSTOM_IMAGES_ENV: json.dumps([r"ghcr\.io/team/.*"]),
            SERVICE_ACCOUNT_ENV: "modelgate-gate-check",
            RESOURCES_ENV: json.dumps({"max": {"cpu": 2}}),
        }
    )
    assert policy.custom_images == (r"ghcr\.io/team/.*",)
    assert policy.service_account == "modelgate-gate-check"
    assert policy.maxima["cpu"] == "2" and policy.maxima["memory"] == "8Gi"
    assert CheckPodPolicy.from_env({}).custom_images is None


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({CUSTOM_IMAGES_ENV: "[not json"}, CUSTOM_IMAGES_ENV),
        ({CUSTOM_IMAGES_ENV: '["("]'}, CUSTOM_IMAGES_ENV),
        ({RESOURCES_ENV: '{"max": {"cpu": "lots"}}'}, RESOURCES_ENV),
    ],
)
def test_a_malformed_setting_stops_the_operator_naming_it(environ: dict[str, str], named: str) -> None:
    with pytest.raises(ValueError, match=re.escape(named)):
        CheckPodPolicy.from_env(environ)


@pytest.mark.parametrize("name", ["chat", "a" * 63, "a" * 64, "x." * 60, "b-" * 60 + "c"])
def test_label_values_fit_and_stay_distinct(name: str) -> None:
    value = label_value(name)
    assert len(value) <= MAX_LABEL_VALUE and LABEL_VALUE.match(value)
    assert (value == name) == (len(name) <= MAX_LABEL_VALUE)
    assert label_value(name + "z") != value
