"""What a person reads when the API server refuses a ModelRollout: a sentence naming the field and
what to write, without a regular expression, and without Kubernetes' "some validation rules were
not checked" beside it where the one refusal already says what is wrong. Every example under
examples/ is still accepted."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from modelgate import API_GROUP, API_VERSION, EVALUATION_PLURAL, PLURAL
from modelgate.api import parse_duration
from testbed.versions import REPO_ROOT
from tests.support.bad_rollouts import BAD_ROLLOUTS, valid_rollout
from tests.support.durations import MALFORMED, WELL_FORMED
from tests.support.kube import scratch_namespace

BY_API_SERVER = {name: row for name, row in BAD_ROLLOUTS.items() if not row.by_operator}
PAUSE = "spec.steps[1].pause.duration"
# Refusals after which the API server runs no CEL rule, and says so in a cause of its own: a value
# of the wrong JSON type, a missing required field, a string or list over its bound. CEL cannot
# take these over (a rule sees no field of another type, and the bounds bound the rules' cost).
STOPS_CEL = {"FieldValueTypeInvalid", "FieldValueRequired", "FieldValueTooLong", "FieldValueTooMany"}
NOT_CHECKED = "validation rules were not checked"
READABLE_LENGTH = 250  # the longest: the thirteen presets a metric may name
PLURALS = {"ModelRollout": PLURAL, "ModelEvaluation": EVALUATION_PLURAL}


@pytest.fixture(scope="module")
def shared_namespace(api_client: client.ApiClient) -> Iterator[str]:
    with scratch_namespace(api_client) as name:
        yield name


def dry_run_create(api_client: client.ApiClient, namespace: str, manifest: dict[str, Any]) -> None:
    plural = PLURALS[manifest["kind"]]
    client.CustomObjectsApi(api_client).create_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, plural, manifest, dry_run="All"
    )


def refusal_causes(api_client: client.ApiClient, namespace: str, manifest: dict[str, Any]) -> list[Any]:
    with pytest.raises(ApiException) as refused:
        dry_run_create(api_client, namespace, manifest)
    assert refused.value.status == 422, refused.value.body
    causes: list[dict[str, str]] = json.loads(refused.value.body or "{}")["details"]["causes"]
    return causes


def looks_like_a_pattern(message: str) -> bool:
    return any(sign in message for sign in ("^(", "^[", ")$", "]*", "]+", "should match"))


def with_pause(namespace: str, duration: str) -> dict[str, Any]:
    manifest = valid_rollout(namespace)
    manifest["spec"]["steps"][1]["pause"]["duration"] = duration
    return manifest


@pytest.mark.parametrize("text", WELL_FORMED, ids=repr)
def test_a_well_formed_duration_is_taken_by_both(
    api_client: client.ApiClient, shared_namespace: str, text: str
) -> None:
    parse_duration(text)
    dry_run_create(api_client, shared_namespace, with_pause(shared_namespace, text))


@pytest.mark.parametrize("text", MALFORMED, ids=repr)
def test_a_malformed_duration_is_refused_by_both_in_one_sentence(
    api_client: client.ApiClient, shared_namespace: str, text: str
) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        parse_duration(text)
    causes = refusal_causes(api_client, shared_namespace, with_pause(shared_namespace, text))
    assert [cause["field"] for cause in causes] == [PAUSE], causes
    message = causes[0]["message"]
    assert len(message) < READABLE_LENGTH and not looks_like_a_pattern(message), message
    assert all(example in message for example in ("30s", "5m", "1h30m")), message


@pytest.mark.parametrize("case", BY_API_SERVER, ids=list(BY_API_SERVER))
def test_a_bad_manifest_gets_readable_refusals_without_the_not_checked_sentence(
    api_client: client.ApiClient, shared_namespace: str, case: str
) -> None:
    manifest = valid_rollout(shared_namespace)
    BY_API_SERVER[case].edit(manifest)
    causes = refusal_causes(api_client, shared_namespace, manifest)
    field = BY_API_SERVER[case].field
    about_the_field = [cause for cause in causes if cause.get("field") == field]
    assert about_the_field, causes
    # metadata's refusals are the API server's own, not the CRD's.
    for cause in about_the_field if field.startswith("spec") else ():
        message = cause["message"]
        assert len(message) < READABLE_LENGTH and not looks_like_a_pattern(message), message
    if not {cause["reason"] for cause in causes} & STOPS_CEL:
        assert not any(NOT_CHECKED in cause["message"] for cause in causes), causes


def example_documents() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in sorted((REPO_ROOT / "examples").rglob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document and document.get("kind") in PLURALS:
                found.append((f"{path.relative_to(REPO_ROOT)}:{document['metadata']['name']}", document))
    return found


EXAMPLES = example_documents()


@pytest.mark.parametrize(("where", "document"), EXAMPLES, ids=[where for where, _ in EXAMPLES])
def test_every_example_is_accepted(
    api_client: client.ApiClient, shared_namespace: str, where: str, document: dict[str, Any]
) -> None:
    document["metadata"]["namespace"] = shared_namespace
    dry_run_create(api_client, shared_namespace, document)


def test_the_examples_are_found() -> None:
    assert len(EXAMPLES) >= 10, [where for where, _ in EXAMPLES]
