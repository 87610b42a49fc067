"""The generated blocks of docs/presets.md: which preset exists for which source, and every query,
rendered by the code the operator runs (`modelgate.metrics.presets`) for the example rollout of
docs/metric-presets.md."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import replace

from modelgate.api.goodput_targets import GoodputTargets
from modelgate.metrics.context import QueryContext
from modelgate.metrics.presets import PRESETS, STACKS, available, preset_query, request_count_query

# slowRequestRate's threshold in the examples: a bound of vLLM's end-to-end latency buckets.
EXAMPLE_THRESHOLD = 2.5
# The goodput presets' targets in the examples: 0.3 s lies between two of vLLM's TTFT bounds.
EXAMPLE_GOODPUT = GoodputTargets(ttft=0.3, tpot=0.05)
# The endpoint picker Service of the example's pool, for the sources that select by model.
EXAMPLE_PICKER = "chat-epp"


def _table() -> list[str]:
    sources = list(STACKS)
    lines = [
        "| preset | unit | " + " | ".join(f"`{source}`" for source in sources) + " |",
        "| --- | --- |" + " --- |" * len(sources),
    ]
    for name, preset in PRESETS.items():
        cells = ["yes" if name in available(source) else "no" for source in sources]
        lines.append(f"| [`{name}`](#{name.lower()}) | {preset.unit} | " + " | ".join(cells) + " |")
    return lines


def _source(source: str, ctx: QueryContext) -> list[str]:
    if STACKS[source].answered is None:
        lines = ["Requests (against `minRequests`, and the requests of every share):", ""]
    else:
        lines = [
            "Requests against `minRequests`: the HTTP counter's, or where the server exports none, the "
            "requests it answered (the HTTP counter alone is every share's denominator):",
            "",
        ]
    lines += _promql(request_count_query(source, ctx))
    if STACKS[source].by_model:
        pooled = replace(ctx, incumbent_picker=EXAMPLE_PICKER, candidate_picker=EXAMPLE_PICKER)
        lines += [
            "",
            f"The same for InferencePool sides whose pool names the endpoint picker Service "
            f"`{EXAMPLE_PICKER}` (every query below gains that `service` matcher alike):",
            "",
            *_promql(request_count_query(source, pooled)),
        ]
    for name in available(source):
        lines += [
            "",
            f"`{name}`:",
            "",
            *_promql(preset_query(name, source, ctx, threshold=EXAMPLE_THRESHOLD, goodput=EXAMPLE_GOODPUT)),
        ]
    lacks = STACKS[source].lacks
    if lacks:
        lines += ["", "No such preset:", ""]
        lines += [f"- `{name}`: {why}." for name, why in lacks.items()]
    return lines


# A series name in PromQL: the word before a `{` selector.
_SERIES = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{")


def readme_preset_table(ctx: QueryContext, source: str = "vllm") -> list[str]:
    """README's table: each preset, its unit, what it measures and the series it divides or reads
    on `source`, taken from the query the operator builds."""
    lines = [f"| preset | unit | measures | series read (`{source}`) |", "| --- | --- | --- | --- |"]
    for name in available(source):
        query = preset_query(name, source, ctx, threshold=EXAMPLE_THRESHOLD, goodput=EXAMPLE_GOODPUT)
        series = ", ".join(f"`{found}`" for found in dict.fromkeys(_SERIES.findall(query)))
        lines.append(f"| `{name}` | {PRESETS[name].unit} | {PRESETS[name].description} | {series} |")
    return lines


def goodput_block(ctx: QueryContext, source: str = "vllm") -> list[str]:
    """docs/metric-presets.md's goodput and cost queries for the example rollout, and the sources
    that have them."""
    per_accelerator = ("goodputPerAccelerator", "goodputTokensPerAccelerator", "costPerMillionTokens")
    lines = [
        f"With `goodput: {{ttft: {EXAMPLE_GOODPUT.ttft:g}, tpot: {EXAMPLE_GOODPUT.tpot:g}}}` and source "
        f"`{source}`, the candidate's goodput per accelerator:",
        "",
        *_promql(preset_query("goodputPerAccelerator", source, ctx, goodput=EXAMPLE_GOODPUT)),
        "",
        "and its cost per million output tokens:",
        "",
        *_promql(preset_query("costPerMillionTokens", source, ctx)),
        "",
        "| preset | " + " | ".join(f"`{name}`" for name in STACKS) + " |",
        "| --- |" + " --- |" * len(STACKS),
    ]
    for name in per_accelerator:
        cells = ["yes" if name in available(stack) else "no" for stack in STACKS]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    lines += ["", "Why a source has none:", ""]
    lines += [
        f"- `{stack}`: {why}."
        for stack in STACKS
        for why in dict.fromkeys(STACKS[stack].lacks.get(name) for name in per_accelerator)
        if why is not None
    ]
    return lines


def _promql(query: str) -> list[str]:
    return ["```promql", query, "```"]


def preset_doc_blocks(ctx: QueryContext) -> Mapping[str, Callable[[], list[str]]]:
    return {
        "presets-by-source": _table,
        **{f"source:{source}": functools.partial(_source, source, ctx) for source in STACKS},
    }
