"""The llm-d CRD the bed installs from its release's manifest (kept in testbed/upstream_crds/, as
hack/versions.env says why): applied only when its bytes are the pinned release's, and of the group,
version and plural the adapter router writes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from modelgate.routers.model_rewrite import MODEL_REWRITE
from testbed.crds import LLMD_MODEL_REWRITE_CRD, checked
from testbed.endpoint_picker import REWRITE_RESOURCE
from testbed.versions import REPO_ROOT, pinned_versions

PINNED = pinned_versions()["LLMD_MODEL_REWRITE_CRD_SHA256"]


def test_the_kept_manifest_is_the_pinned_release() -> None:
    assert checked(LLMD_MODEL_REWRITE_CRD, PINNED) == LLMD_MODEL_REWRITE_CRD


def test_a_manifest_changed_by_one_byte_is_refused(tmp_path: Path) -> None:
    edited = tmp_path / LLMD_MODEL_REWRITE_CRD.name
    edited.write_bytes(LLMD_MODEL_REWRITE_CRD.read_bytes().replace(b"maximum: 1000000", b"maximum: 1000001"))
    with pytest.raises(ValueError, match=r"not the pinned"):
        checked(edited, PINNED)


def test_the_router_and_the_beds_endpoint_picker_use_the_installed_kind() -> None:
    crd = yaml.safe_load(LLMD_MODEL_REWRITE_CRD.read_text())
    served = {
        (crd["spec"]["group"], v["name"], crd["spec"]["names"]["plural"]) for v in crd["spec"]["versions"]
    }
    (written,) = MODEL_REWRITE.resources
    assert (written.group, written.version, written.plural) in served
    assert REWRITE_RESOURCE in served


def test_the_leaderworkerset_crd_and_controller_are_of_one_release() -> None:
    """The CRD comes by hack/versions.env's LWS_VERSION, the controller is built from
    hack/gomod/lws/go.mod's requirement: a bump of one alone would pair a CRD and a controller of two
    releases without a word."""
    go_mod = (REPO_ROOT / "hack" / "gomod" / "lws" / "go.mod").read_text()
    required = re.search(r"^\s*sigs\.k8s\.io/lws (v\S+)$", go_mod, re.MULTILINE)
    assert required is not None, "hack/gomod/lws/go.mod requires no sigs.k8s.io/lws"
    assert required.group(1) == pinned_versions()["LWS_VERSION"]
