"""The engine's properties (tests/unit/test_engine_properties.py) on 1,000 generated rollouts each,
where `make test` runs 60: the same derandomized strategies, more of them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from testbed.versions import REPO_ROOT

pytestmark = pytest.mark.bench

EXAMPLES = 1000


@pytest.mark.timeout(1800)
def test_the_engine_keeps_its_properties_on_1000_rollouts() -> None:
    env = {**os.environ, "MODELGATE_PROPERTY_EXAMPLES": str(EXAMPLES)}
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "tests/unit/test_engine_properties.py",
    ]
    ran = subprocess.run(argv, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
