"""docs/metric-presets.md shows the PromQL the operator runs: its generated blocks must be what
`python -m tooling.docs_gen` renders from modelgate.metrics, and that must be what the reconciler's
own code path builds for the same rollout."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelgate.api import parse_spec
from modelgate.metrics.presets import PRESETS
from modelgate.metrics.promql_plan import analysis_plan
from modelgate.metrics.template import TEMPLATE_VARIABLES
from tooling import docs_gen

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / docs_gen.METRIC_PRESETS
REGENERATE = f"run `.venv/bin/{docs_gen.COMMAND}` and commit the result"


@pytest.fixture(scope="module")
def doc() -> str:
    return DOC.read_text()


def test_generated_blocks_are_current(doc: str) -> None:
    expected = docs_gen.fill_generated_blocks(doc, docs_gen.metric_preset_blocks(), str(DOC))
    assert doc == expected, f"the generated blocks of {docs_gen.METRIC_PRESETS} are out of date: {REGENERATE}"


def test_the_doc_shows_what_the_reconciler_runs(doc: str) -> None:
    """The same rollout, through the code path the reconciler uses (spec -> analysis_plan)."""
    spec = parse_spec(
        {
            "incumbent": {"deployment": docs_gen.EXAMPLE_INCUMBENT},
            "candidate": {"deployment": docs_gen.EXAMPLE_CANDIDATE},
            "trafficRouting": {
                "gatewayAPI": {"httpRoute": "chat", "incumbentBackend": "a", "candidateBackend": "b"}
            },
            "steps": [{"setWeight": 10}],
            "analysis": {
                "interval": docs_gen.EXAMPLE_INTERVAL,
                "prometheus": {"address": "http://prometheus:9090"},
                "metrics": [
                    *({"name": name.lower(), "preset": name, "max": 1} for name in PRESETS),
                    {"name": "custom", "query": docs_gen.EXAMPLE_TEMPLATE, "max": 1},
                ],
            },
        }
    )
    queries = analysis_plan(spec, docs_gen.EXAMPLE_NAMESPACE)
    for query in [queries.request_count, *(metric.candidate for metric in queries.metrics.values())]:
        assert f"```promql\n{query}\n```" in doc, f"{docs_gen.METRIC_PRESETS} does not show {query}"


def test_every_preset_has_a_section(doc: str) -> None:
    for name in PRESETS:
        assert f"\n### {name}\n" in doc, f"{docs_gen.METRIC_PRESETS} has no section for the preset {name}"


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
