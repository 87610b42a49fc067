"""Where benchmark numbers go: one JSON file per benchmark under bench/results/ (git-ignored),
summarised by hand in bench/REPORT.md."""

from __future__ import annotations

import json
import platform
import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "median": statistics.median(ordered),
        "p90": ordered[int(0.9 * (len(ordered) - 1))],
        "p99": ordered[int(0.99 * (len(ordered) - 1))],
        "max": ordered[-1],
    }


def record(name: str, results: dict[str, Any]) -> Path:
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    document = {
        "benchmark": name,
        "at": datetime.now(UTC).isoformat(),
        "machine": {"python": platform.python_version(), "cpus": _cpus()},
        **results,
    }
    path.write_text(json.dumps(document, indent=2))
    print(json.dumps(document, indent=2))  # shown with -s
    return path


def _cpus() -> int:
    import os

    return os.cpu_count() or 0
