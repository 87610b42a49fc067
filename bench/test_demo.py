"""`make demo` tells its story end to end on llm-d's vLLM simulator behind Traefik: a good candidate
promoted, one failing 10% of its requests and one whose first token comes 3x later rolled back. In
`make bench`, not `make test`: minutes of its own bed, and `make demo` is itself the check users run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench
BED_LOG_LINE = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} ")


@pytest.mark.usefixtures("local_bed")  # skipped against other clusters: the demo needs the bed binaries
def test_demo_promotes_the_good_candidate_and_rolls_back_the_failing_and_the_slow_one(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "testbed.demo", "--root", str(tmp_path / "bed")],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        env={**os.environ, "COLUMNS": "80"},  # a terminal of 80 columns, as in a log file
    )
    # The demo exits 0 only when each act ended as its story says (testbed/demo.py, ACTS).
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    story = result.stdout[result.stdout.index("What happened") :]
    # The bed's own log lines (a timestamp first) follow the story as they come, at any length.
    told = [line for line in story.splitlines() if not BED_LOG_LINE.match(line)]
    assert all(len(line) <= 80 for line in told), "\n".join(told)
    assert "error-rate" in story and "ttft-p99" in story, story
