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
    setting (a variant: "16 (main)" is the code before issue 8's changes)."""
    import matplotlib

    matplotlib.use("Agg")  # files only; no display
    import matplotlib.pyplot as plt

    variants: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        variants.setdefault(str(row["workers"]), []).append(row)
    figure, (lag_axes, cpu_axes, memory_axes) = plt.subplots(1, 3, figsize=(14, 4.2))
    for variant, runs in variants.items():
        sizes = [r["rollouts"] for r in runs]
        lag_axes.plot(
            sizes, [r["step_lag_seconds"]["p99"] or 0 for r in runs], marker="o", label=f"{variant}: p99"
        )
        lag_axes.plot(
            sizes,
            [r["step_lag_seconds"]["median"] or 0 for r in runs],
            marker=".",
            linestyle="--",
            label=f"{variant}: p50",
        )
        cpu_axes.plot(sizes, [r["cpu_cores"] for r in runs], marker="o", label=variant)
        memory_axes.plot(sizes, [r["rss_peak_mib"] for r in runs], marker="s", label=variant)
    lag_axes.axhline(2, color="grey", linestyle=":", label="target p99 2 s")
    lag_axes.set_yscale("symlog", linthresh=0.1)
    lag_axes.set(xscale="log", xlabel="rollouts", ylabel="seconds", title="Step lag (workers)")
    lag_axes.set_ylim(bottom=0)
    cpu_axes.axhline(1, color="grey", linestyle=":", label="target 1 core")
    cpu_axes.set(xscale="log", xlabel="rollouts", ylabel="cores", title="Operator CPU")
    memory_axes.axhline(300, color="grey", linestyle=":", label="target 300 MB")
    memory_axes.set(xscale="log", xlabel="rollouts", ylabel="MiB", title="Operator RSS, peak")
    for axes in (lag_axes, cpu_axes, memory_axes):
        axes.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)


if __name__ == "__main__":
    print(scale_report())
