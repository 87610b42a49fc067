"""docs/metric-presets.md and docs/presets.md show the PromQL the operator runs: their generated
blocks must be what `python -m tooling.docs_gen` renders from modelgate.metrics, and that must be
what the reconciler's own code path builds for the same rollout, for every source."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelgate.api import parse_spec
from modelgate.api.analysis import GOODPUT_PRESETS
from modelgate.metrics.presets import PRESETS, STACKS, available
from modelgate.metrics.promql_plan import analysis_plan
from modelgate.metrics.template import TEMPLATE_VARIABLES
from tooling import docs_gen
from tooling.presets_doc import EXAMPLE_GOODPUT, EXAMPLE_THRESHOLD

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / docs_gen.METRIC_PRESETS
BY_SOURCE = ROOT / docs_gen.PRESETS_BY_SOURCE
REGENERATE = f"run `.venv/bin/{docs_gen.COMMAND}` and commit the result"


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text()


@pytest.fixture(scope="module")
def by_source() -> str:
    return BY_SOURCE.read_text()


def test_generated_blocks_are_current(doc: str, by_source: str) -> None:
    expected = docs_gen.fill_generated_blocks(doc, docs_gen.metric_preset_blocks(), str(DOC))
    assert doc == expected, f"the generated blocks of {docs_gen.METRIC_PRESETS} are out of date: {REGENERATE}"
    expected = docs_gen.fill_generated_blocks(by_source, docs_gen.presets_by_source_blocks(), str(BY_SOURCE))
    assert by_source == expected, (
        f"the generated blocks of {docs_gen.PRESETS_BY_SOURCE} are out of date: {REGENERATE}"
    )


def test_the_readmes_preset_table_is_generated_from_the_queries() -> None:
    # Hand-written, it once said refusalRate divides by http_requests_total; the code divides by the
    # refusal proxy's llm_requests_total, and a rollout written from the README hung.
    readme = (docs_gen.REPO_ROOT / docs_gen.README).read_text()
    expected = docs_gen.fill_generated_blocks(readme, docs_gen.readme_blocks(), str(docs_gen.README))
    assert readme == expected, f"README's preset table is out of date: {REGENERATE}"


def example_spec(source: str, metrics: list[dict[str, object]]) -> dict[str, object]:
    return {
        "incumbent": {"deployment": docs_gen.EXAMPLE_INCUMBENT},
        "candidate": {"deployment": docs_gen.EXAMPLE_CANDIDATE},
        "trafficRouting": {
            "gatewayAPI": {
                "httpRoute": docs_gen.EXAMPLE_ROUTE,
                "incumbentBackend": docs_gen.EXAMPLE_INCUMBENT,
                "candidateBackend": docs_gen.EXAMPLE_CANDIDATE,
            }
        },
        "steps": [{"setWeight": 10}],
        "analysis": {
            "interval": docs_gen.EXAMPLE_INTERVAL,
            "prometheus": {"address": "http://prometheus:9090"},
            "source": source,
            "accelerators": {
                side: {"count": count, "pricePerHour": price}
                for side, count, price in zip(
                    ("incumbent", "candidate"),
                    docs_gen.EXAMPLE_ACCELERATORS,
                    docs_gen.EXAMPLE_PRICES,
                    strict=True,
                )
            },
            "metrics": metrics,
        },
    }


def shows(page: str, query: str) -> bool:
    return f"```promql\n{query}\n```" in page


def test_the_docs_show_what_the_reconciler_runs(doc: str, by_source: str) -> None:
    """The same rollout, through the code path the reconciler uses (spec -> analysis_plan)."""
    custom = {"name": "custom", "query": docs_gen.EXAMPLE_TEMPLATE, "max": 1}
    plan = analysis_plan(
        parse_spec(example_spec(docs_gen.EXAMPLE_SOURCE, [custom])), docs_gen.EXAMPLE_NAMESPACE
    )
    for query in (plan.request_count, plan.metrics["custom"].candidate):
        assert shows(doc, query), f"{docs_gen.METRIC_PRESETS} does not show {query}"
    for source in STACKS:
        metrics = [
            {"name": name.lower(), "preset": name, "max": 1}
            | ({"threshold": EXAMPLE_THRESHOLD} if name == "slowRequestRate" else {})
            | ({"goodput": EXAMPLE_GOODPUT.model_dump(by_alias=True)} if name in GOODPUT_PRESETS else {})
            for name in available(source)
        ]
        plan = analysis_plan(parse_spec(example_spec(source, metrics)), docs_gen.EXAMPLE_NAMESPACE)
        for query in (plan.request_count, *(metric.candidate for metric in plan.metrics.values())):
            assert shows(by_source, query), f"{docs_gen.PRESETS_BY_SOURCE} does not show {query} ({source})"


def test_every_preset_and_source_has_a_section(by_source: str) -> None:
    for name in PRESETS:
        assert f"\n### {name}\n" in by_source, f"{docs_gen.PRESETS_BY_SOURCE} has no section for {name}"
    for source in STACKS:
        assert f"\nSource `{source}`" in by_source, f"{docs_gen.PRESETS_BY_SOURCE} does not describe {source}"


def test_every_template_variable_is_listed(doc: str) -> None:
    for name in TEMPLATE_VARIABLES:
        assert f"`{{{{ {name} }}}}`" in doc


def test_filling_refuses_unknown_missing_and_repeated_blocks() -> None:
    blocks = {"a": "A\n", "b": "B\n"}

    def block(key: str) -> str:
        return f"<!-- BEGIN GENERATED {key} -->\nold\n<!-- END GENERATED {key} -->\n"

    assert docs_gen.fill_generated_blocks(block("a") + "text\n" + block("b"), blocks, "doc") == (
        "<!-- BEGIN GENERATED a -->\nA\n<!-- END GENERATED a -->\ntext\n"
        "<!-- BEGIN GENERATED b -->\nB\n<!-- END GENERATED b -->\n"
    )
    with pytest.raises(ValueError, match="unknown generated block 'c'"):
        docs_gen.fill_generated_blocks(block("a") + block("b") + block("c"), blocks, "doc")
    with pytest.raises(ValueError, match="block 'b' is missing"):
        docs_gen.fill_generated_blocks(block("a"), blocks, "doc")
    with pytest.raises(ValueError, match="block 'a' appears 2 times"):
        docs_gen.fill_generated_blocks(block("a") + block("a") + block("b"), blocks, "doc")


def test_every_variable_needs_a_meaning() -> None:
    assert set(docs_gen.VARIABLE_MEANINGS) == set(TEMPLATE_VARIABLES)
