"""Every image the chart renders (the operator, its evaluator Jobs' image, the refusal proxy) goes
by digest when one is given, whatever the tag says, and by tag otherwise; the schema refuses a
digest, tag or repository that is not one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from tests.unit.test_chart import REPOSITORY, Object, render, render_error

OPERATOR_DIGEST = "sha256:" + "0123456789abcdef" * 4
PROXY_DIGEST = "sha256:" + "fedcba9876543210" * 4


def images(node: Any) -> Iterator[str]:
    """Every image reference in rendered objects: `image` fields, `*_IMAGE` env values, and those
    in YAML documents a ConfigMap carries (the refusal proxy's container)."""
    if isinstance(node, dict):
        if isinstance(node.get("image"), str):
            yield node["image"]
        if str(node.get("name", "")).endswith("_IMAGE") and "value" in node:
            yield node["value"]
        for key, value in node.items():
            if isinstance(value, str) and str(key).endswith(".yaml"):
                yield from images(yaml.safe_load(value))
            else:
                yield from images(value)
    elif isinstance(node, list):
        for item in node:
            yield from images(item)


def rendered_images(values: Object) -> list[str]:
    return list(images(render({"refusalProxy": {"enabled": True}} | values)))


def test_without_a_digest_every_image_goes_by_tag() -> None:
    found = rendered_images({"image": {"tag": "0.1.1"}})
    assert len(found) == 3  # operator, evaluator env, refusal proxy
    assert set(found) == {f"{REPOSITORY}:0.1.1"}


def test_a_digest_pins_every_image_and_the_tag_is_ignored() -> None:
    found = rendered_images({"image": {"tag": "0.1.1", "digest": OPERATOR_DIGEST}})
    assert len(found) == 3
    assert set(found) == {f"{REPOSITORY}@{OPERATOR_DIGEST}"}


def test_the_refusal_proxy_image_of_its_own_goes_by_its_digest() -> None:
    proxy = {"repository": "registry.example:5000/proxy", "tag": "v2", "digest": PROXY_DIGEST}
    found = rendered_images(
        {"image": {"digest": OPERATOR_DIGEST}, "refusalProxy": {"enabled": True, "image": proxy}}
    )
    assert sorted(found) == sorted(
        [
            f"{REPOSITORY}@{OPERATOR_DIGEST}",
            f"{REPOSITORY}@{OPERATOR_DIGEST}",
            f"registry.example:5000/proxy@{PROXY_DIGEST}",
        ]
    )
    by_tag = rendered_images({"refusalProxy": {"enabled": True, "image": {**proxy, "digest": ""}}})
    assert "registry.example:5000/proxy:v2" in by_tag


def test_a_registry_goes_before_the_repository_of_the_operators_images() -> None:
    found = rendered_images({"image": {"registry": "ghcr.io", "repository": "my-org/modelgate"}})
    assert found == ["ghcr.io/my-org/modelgate:0.1.0"] * 3
    pinned = rendered_images({"image": {"registry": "registry.example:5000", "digest": OPERATOR_DIGEST}})
    assert set(pinned) == {f"registry.example:5000/{REPOSITORY}@{OPERATOR_DIGEST}"}


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"image": {"digest": "sha256:abc"}}, "/image/digest"),
        ({"image": {"digest": "latest"}}, "/image/digest"),
        ({"image": {"digest": OPERATOR_DIGEST.upper()}}, "/image/digest"),
        ({"image": {"repository": f"ghcr.io/evil/x@{OPERATOR_DIGEST}"}}, "/image/repository"),
        ({"image": {"tag": f"x@{OPERATOR_DIGEST}"}}, "/image/tag"),
        ({"image": {"registry": "https://ghcr.io"}}, "/image/registry"),
        ({"image": {"registry": "ghcr.io/"}}, "/image/registry"),
        ({"refusalProxy": {"image": "ghcr.io/evil/proxy:latest"}}, "/refusalProxy/image"),
        (
            {"refusalProxy": {"image": {"repository": "", "digest": PROXY_DIGEST}}},
            "/refusalProxy/image/digest",
        ),
        ({"refusalProxy": {"image": {"repository": "p", "digest": "sha256:"}}}, "/refusalProxy/image/digest"),
    ],
)
def test_schema_refuses_an_image_reference_that_is_not_one_naming_the_field(
    values: Object, field: str
) -> None:
    error = render_error(values)
    assert "values don't meet the specifications of the schema" in error
    assert f"at '{field}'" in error
