"""Where benchmark numbers go: one JSON file per benchmark under bench/results/ (git-ignored),
summarised in bench/REPORT.md. `python -m bench.report` prints the scale benchmark's table from
the results at hand and draws its plot (bench/scale.png)."""

from __future__ import annotations

import json
import platform
import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def summary(samples: list[float]) -> dict[str, float | None]:
    ordered = sorted(samples)
    if not ordered:
        return {"n": 0, "median": None, "p90": None, "p99": None, "max": None}
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


SCALE_PLOT = Path(__file__).parent / "scale.png"
_SCALE_COLUMNS = (
    "| rollouts | workers | load avg before / after | step lag p50 / p99 / max (s) "
    "| breach to 0 median / max (s) | RSS peak (MiB) | CPU (cores) | API req/s | PromQL q/s "
    "| ticks/s | mean tick / wait (ms) | mean API request / PromQL query (ms) | ended |"
)


def scale_results() -> list[dict[str, Any]]:
    """The scale benchmark's results per size, smallest first."""
    documents = [json.loads(path.read_text()) for path in RESULTS.glob("scale-*.json")]
    return sorted(documents, key=lambda d: (int(d["rollouts"]), str(d["workers"])))


def scale_report() -> str:
    """The Markdown table of every size measured; draws the plot beside it."""
    rows = scale_results()
    if rows:
        plot_scale(rows, SCALE_PLOT)
    lines = [_SCALE_COLUMNS, "|" + " --- |" * _SCALE_COLUMNS.count(" | ") + " --- |"]
    for r in rows:
        lag, breach = r["step_lag_seconds"], r["breach_to_zero_seconds"]
        lines.append(
            f"| {r['rollouts']} | {r['workers']} "
            f"| {r['load_average_before'][0]:.1f} / {r['load_average_after'][0]:.1f} "
            f"| {_s(lag['median'])} / {_s(lag['p99'])} / {_s(lag['max'])} "
            f"| {_s(breach['median'])} / {_s(breach['max'])} "
            f"| {r['rss_peak_mib']:.0f} | {r['cpu_cores']:.2f} | {r['api_requests_per_second']:.1f} "
            f"| {r['promql_queries_per_second']:.1f} | {r['ticks_per_second']:.1f} "
            f"| {r['tick_mean_ms']:.0f} / {r['tick_wait_mean_ms']:.0f} "
            f"| {_ms(r, 'api_request_mean_ms')} / {_ms(r, 'promql_query_mean_ms')} "
            f"| {r['ended']} of {r['rollouts']} |"
        )
    return "\n".join(lines)


def _ms(row: dict[str, Any], key: str) -> str:
    return f"{row[key]:.0f}" if key in row else "-"  # not measured before those histograms existed


def _s(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f}"


def plot_scale(rows: list[dict[str, Any]], path: Path) -> None:
    """Lag (left) and CPU and RSS (right) against the number of rollouts, one line per workers
    setting (a variant: "16 (main)" is the code before issue 8's changes); drawn as the report's
    charts are (a Vega-Lite spec, vl-convert)."""
    from modelgate.cli.report.vega import png  # the `report` extra, as `modelgate report`'s

    path.write_bytes(png(scale_chart(rows)))


def scale_chart(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The Vega-Lite spec of the scale plot: three panels side by side, each with its target."""
    points = [
        {
            "rollouts": r["rollouts"],
            "variant": str(r["workers"]),
            "lag p99": r["step_lag_seconds"]["p99"] or 0,
            "lag p50": r["step_lag_seconds"]["median"] or 0,
            "cores": r["cpu_cores"],
            "MiB": r["rss_peak_mib"],
        }
        for r in rows
    ]
    lag = _scale_panel(points, "Step lag, p99 (solid) and p50 (dashed)", "seconds", ["lag p99", "lag p50"], 2)
    lag["layer"][0]["encoding"]["y"]["scale"] = {"type": "symlog", "constant": 0.1}
    lag["layer"][0]["encoding"]["y"]["axis"] = {"values": [0, 0.1, 0.5, 1, 2, 5, 10, 20, 50]}
    return {
        "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
        "hconcat": [
            lag,
            _scale_panel(points, "Operator CPU", "cores", ["cores"], 1),
            _scale_panel(points, "Operator RSS, peak", "MiB", ["MiB"], 300),
        ],
        "resolve": {"scale": {"color": "shared", "strokeDash": "independent"}},
        "background": "white",
    }


def _scale_panel(
    points: list[dict[str, Any]], title: str, unit: str, measures: list[str], target: float
) -> dict[str, Any]:
    x = {"field": "rollouts", "type": "quantitative", "scale": {"type": "log"}, "title": "rollouts"}
    line = {
        "data": {"values": points},
        "transform": [{"fold": measures, "as": ["measure", "value"]}],
        "mark": {"type": "line", "point": True},
        "encoding": {
            "x": x,
            "y": {"field": "value", "type": "quantitative", "title": unit},
            "color": {"field": "variant", "type": "nominal", "title": "workers"},
            "strokeDash": {
                "field": "measure",
                "type": "nominal",
                "legend": None,
                "scale": {"domain": measures, "range": [[1, 0], [5, 3]]},
            },
            "detail": {"field": "measure"},
        },
    }
    one = {"values": [{}]}  # a layer of one item
    goal = {
        "data": one,
        "mark": {"type": "rule", "color": "grey", "strokeDash": [2, 2]},
        "encoding": {"y": {"datum": target}},
    }
    goal_label = {
        "data": one,
        "mark": {
            "type": "text",
            "align": "left",
            "dy": -6,
            "color": "grey",
            "text": f"target {target:g} {unit}",
        },
        "encoding": {"y": {"datum": target}, "x": {"value": 4}},
    }
    return {"title": title, "width": 300, "height": 240, "layer": [line, goal, goal_label]}


if __name__ == "__main__":
    print(scale_report())
