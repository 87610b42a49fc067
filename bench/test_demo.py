"""`make demo` tells its story end to end: a good candidate promoted, a bad one rolled back. In
`make bench`, not `make test`: a minute of its own bed, and `make demo` is itself the check users run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench


@pytest.mark.usefixtures("local_bed")  # skipped against other clusters: the demo needs the bed binaries
def test_demo_promotes_the_good_candidate_and_rolls_back_the_bad_one(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "testbed.demo", "--root", str(tmp_path / "bed")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "COLUMNS": "160"},
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "What happened" in result.stdout
    assert "Succeeded" in result.stdout and "RolledBack" in result.stdout
    assert "error-rate" in result.stdout
