"""The locks `make lock` writes: requirements.lock (what `make venv` installs) and
requirements-image.lock (what the Dockerfile installs). Both must satisfy pyproject.toml, carry a
hash for every pin (pip's --require-hashes refuses anything else), and agree on versions."""

from __future__ import annotations

import re
import tomllib

import pytest
from packaging.requirements import Requirement

from testbed.versions import REPO_ROOT
from tooling.requirements_lock import Pin, normalized, read_pins, unhashed

PROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
RUNTIME = [Requirement(r) for r in PROJECT["project"]["dependencies"]]
DEV = [Requirement(r) for r in PROJECT["project"]["optional-dependencies"]["dev"]]
BUILD = [Requirement(r) for r in PROJECT["build-system"]["requires"]]
DEV_LOCK = read_pins((REPO_ROOT / "requirements.lock").read_text())
IMAGE_LOCK = read_pins((REPO_ROOT / "requirements-image.lock").read_text())


def unsatisfied(requirements: list[Requirement], pins: dict[str, Pin]) -> list[str]:
    """Requirements the lock does not pin, or pins at a version outside their specifier."""
    return [
        str(r)
        for r in requirements
        if normalized(r.name) not in pins or pins[normalized(r.name)].version not in r.specifier
    ]


def test_a_pip_compile_lock_is_read_pin_by_pin_with_its_hashes() -> None:
    text = (
        "# header\n"
        "boolean-py==5.0 \\\n"
        f"    --hash=sha256:{'a' * 64} \\\n"
        f"    --hash=sha256:{'b' * 64}\n"
        "    # via license-expression\n"
        "PyYAML==6.0.3\n"
    )
    assert read_pins(text) == {
        "boolean-py": Pin("5.0", frozenset({"a" * 64, "b" * 64})),
        "pyyaml": Pin("6.0.3", frozenset()),
    }


def test_a_requirement_that_is_not_pinned_is_refused() -> None:
    with pytest.raises(ValueError, match=re.escape("aiohttp>=3.9")):
        read_pins("aiohttp>=3.9\n")


@pytest.mark.parametrize("pins", [DEV_LOCK, IMAGE_LOCK], ids=["requirements.lock", "requirements-image.lock"])
def test_every_pin_has_a_hash(pins: dict[str, Pin]) -> None:
    assert unhashed(pins) == [], "run `make lock`"


def test_the_development_lock_satisfies_every_declared_and_build_requirement() -> None:
    assert unsatisfied(RUNTIME + DEV + BUILD, DEV_LOCK) == [], "run `make lock`"


def test_the_image_lock_is_the_operator_and_its_build_at_the_development_versions() -> None:
    assert unsatisfied(RUNTIME + BUILD, IMAGE_LOCK) == [], "run `make lock`"
    assert IMAGE_LOCK.keys() <= DEV_LOCK.keys()
    assert {name: pin.version for name, pin in IMAGE_LOCK.items()} == {
        name: DEV_LOCK[name].version for name in IMAGE_LOCK
    }
    runtime_names = {normalized(r.name) for r in RUNTIME}
    dev_only = {normalized(r.name) for r in DEV} - runtime_names
    assert dev_only & IMAGE_LOCK.keys() == set(), "a development tool in the image"
