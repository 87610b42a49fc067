"""A malformed duration is refused by the API server's CEL rule in one sentence with examples, and
by parse_duration alike, on a table of durations as people write them; every example under
examples/ is still accepted (tests/cluster/test_bad_manifests.py reads every other refusal)."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from modelgate import API_GROUP, API_VERSION, EVALUATION_PLURAL, PLURAL
from modelgate.api import parse_duration
from testbed.versions import REPO_ROOT
from tests.support.bad_rollouts import valid_rollout
from tests.support.durations import MALFORMED, WELL_FORMED
from tests.support.refusals import is_readable

PAUSE = "spec.steps[1].pause.duration"
PLURALS = {"ModelRollout": PLURAL, "ModelEvaluation": EVALUATION_PLURAL}


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
    assert is_readable(message), message
    assert all(example in message for example in ("30s", "5m", "1h30m")), message


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
