"""PromQL evaluated by Prometheus's own engine, offline: `promtool test rules` loads known series
and checks the exact samples each expression returns. No scraping and no clock: deterministic."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path

import yaml

from testbed.binaries import binary

SCRAPE_INTERVAL = "15s"
# Series are sampled every 15s from 0 on; a constant increment per sample is a constant rate, and
# at 5m a 1m window holds 5 samples exactly at its edges, so rates come out without extrapolation.
EVAL_TIME = "5m"

# Samples by their label set ("{}" for none). Empty: the query returns nothing, i.e. "no data".
Samples = Mapping[str, float]
NO_DATA: Samples = {}


def one(value: float) -> Samples:
    """A single sample without labels, as sum() and the presets return."""
    return {"{}": value}


def counter(per_second: float) -> str:
    """promtool's notation for a counter growing at `per_second` from 0, sampled up to EVAL_TIME."""
    return f"0+{per_second * 15:g}x20"


def assert_evaluates(tmp_path: Path, series: Mapping[str, str], expected: Mapping[str, Samples]) -> None:
    """Each expression of `expected`, evaluated at EVAL_TIME over `series` (selector -> promtool
    values), must return exactly those samples; otherwise fails with promtool's expected/got report."""
    tests = {
        "rule_files": [],
        "tests": [
            {
                "interval": SCRAPE_INTERVAL,
                "input_series": [{"series": s, "values": values} for s, values in series.items()],
                "promql_expr_test": [
                    {
                        "expr": expr,
                        "eval_time": EVAL_TIME,
                        "exp_samples": [{"labels": labels, "value": v} for labels, v in samples.items()],
                    }
                    for expr, samples in expected.items()
                ],
            }
        ],
    }
    path = tmp_path / "promql_test.yaml"
    path.write_text(yaml.safe_dump(tests, sort_keys=False))
    result = subprocess.run(
        [str(binary("promtool")), "test", "rules", str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
