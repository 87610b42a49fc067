"""The generated parts of docs/: the API reference from the CRD (itself generated from the models by
tooling.crd_gen; `make generate` runs both), and the PromQL examples of the metric presets from the
code that builds them.

    python -m tooling.docs_gen           # rewrite what is out of date
    python -m tooling.docs_gen --check   # exit 1, naming the files, when something is out of date

`docs/api-reference.md` is generated whole. `docs/metric-presets.md`, `docs/presets.md` and README's
preset table, charts/modelgate/README.md (its values table, from values.yaml's comments) and
docs/getting-started.md (its `modelgate status` sample, from the CLI's renderer) and
docs/architecture.md (its module table, from each module's docstring: tooling.module_table_doc) are
written by hand except for the blocks between `<!-- BEGIN GENERATED key -->` and
`<!-- END GENERATED key -->`, which are replaced. The output depends only on the inputs (no dates,
no versions), so the tests can compare the committed files with a fresh rendering.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from modelgate import KIND
from modelgate.api.unit_hints import Unit, not_a_number
from modelgate.core.reasons import how_many
from modelgate.metrics.context import DEFAULT_MIN_WINDOW, QueryContext, QueryContextError
from modelgate.metrics.presets import preset_query, request_count_query
from modelgate.metrics.template import TEMPLATE_VARIABLES, TemplateError, render_query
from tooling.chart_values_doc import other_charts_table, values_table
from tooling.cli_samples_doc import status_sample
from tooling.module_table_doc import module_tables
from tooling.presets_doc import goodput_block, preset_doc_blocks, readme_preset_table
from tooling.verdicts_doc import verdict_effects_table, verdict_rules_table

REPO_ROOT = Path(__file__).resolve().parents[1]
CRD_FILE = Path("crds/modelrollouts.modelgate.io.yaml")
API_REFERENCE = Path("docs/api-reference.md")
EVALUATION_CRD_FILE = Path("crds/modelevaluations.modelgate.io.yaml")
EVALUATION_API_REFERENCE = Path("docs/evaluation-api-reference.md")
# The rollout policies' references (docs/policies.md explains them): CRD file, reference.
POLICY_REFERENCES = (
    (Path("crds/modelrolloutpolicies.modelgate.io.yaml"), Path("docs/policy-api-reference.md")),
    (
        Path("crds/clustermodelrolloutpolicies.modelgate.io.yaml"),
        Path("docs/cluster-policy-api-reference.md"),
    ),
)
METRIC_PRESETS = Path("docs/metric-presets.md")
PRESETS_BY_SOURCE = Path("docs/presets.md")
GETTING_STARTED = Path("docs/getting-started.md")
ARCHITECTURE = Path("docs/architecture.md")
README = Path("README.md")
CHART_VALUES = Path("charts/modelgate/values.yaml")
CHART_README = Path("charts/modelgate/README.md")
CHART_OTHER_NAMES = Path("charts/modelgate/files/other-charts-values.yaml")
# The source of the examples in docs/metric-presets.md (the default of spec.analysis.source).
EXAMPLE_SOURCE = "vllm"
COMMAND = "python -m tooling.docs_gen"

Node = Mapping[str, Any]


# -- docs/api-reference.md -------------------------------------------------------------------------
@dataclass(frozen=True)
class Field:
    path: str  # e.g. spec.steps[].setWeight
    node: Node
    required: bool


@dataclass(frozen=True)
class Rule:
    path: str
    rule: Node


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation other than '-' and '_' dropped."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _value(value: object) -> str:
    return _code(value if isinstance(value, str) else json.dumps(value, sort_keys=True))


def _is_object(node: Node) -> bool:
    return node.get("type") == "object" and "properties" in node


def _type(node: Node) -> str:
    kind = str(node.get("type", "any"))
    if kind == "array":
        kind = f"[]{_type(node['items'])}"
    elif "format" in node:
        kind = f"{kind} ({node['format']})"
    return kind + (", nullable" if node.get("nullable") else "")


def _object_under(path: str, node: Node) -> tuple[str, Node] | None:
    """The object section a field links to: the field itself, or its array's items."""
    if _is_object(node):
        return path, node
    items = node.get("items")
    if node.get("type") == "array" and isinstance(items, Mapping) and _is_object(items):
        return f"{path}[]", items
    return None


def _range(node: Node, low_key: str, high_key: str, unit: str) -> str | None:
    low, high = node.get(low_key), node.get(high_key)
    if low is not None and high is not None:
        return f"{unit}{low} to {high}".strip()
    if low is not None:
        return f"{unit}at least {low}".strip()
    if high is not None:
        return f"{unit}at most {high}".strip()
    return None


def _constraints(node: Node, rules: bool = True) -> list[str]:
    found = []
    if "enum" in node:
        found.append("one of " + ", ".join(_value(v) for v in node["enum"]))
    for low, high, unit in (
        ("minimum", "maximum", ""),
        ("minLength", "maxLength", "length "),
        ("minItems", "maxItems", "items: "),
    ):
        described = _range(node, low, high, unit)
        if described is not None:
            found.append(described)
    if "pattern" in node:
        found.append(f"pattern {_code(node['pattern'])}")
    if node.get("x-kubernetes-list-type") == "map":
        keys = ", ".join(_code(k) for k in node.get("x-kubernetes-list-map-keys", []))
        found.append(f"list-type map: items unique by {keys}")
    if rules:
        found += [
            f"rule {_code(rule['rule'])}: {_message(rule)}"
            for rule in node.get("x-kubernetes-validations", [])
        ]
    return found


def _message(rule: Node) -> str:
    if "message" in rule:
        return str(rule["message"])
    if "messageExpression" in rule:
        return f"{_code(str(rule['messageExpression']))} (a CEL expression)"
    return f"{_code('failed rule: ' + str(rule['rule']))} (the API server's default)"


def _sections(path: str, node: Node) -> Iterator[tuple[str, Node]]:
    """Every object below `node` (included) that has properties, depth first, in file order."""
    yield path, node
    for name, child in node.get("properties", {}).items():
        below = _object_under(f"{path}.{name}", child)
        if below is not None:
            yield from _sections(*below)


def _fields(path: str, node: Node) -> list[Field]:
    required = set(node.get("required", []))
    return [
        Field(f"{path}.{name}", child, name in required) for name, child in node.get("properties", {}).items()
    ]


def _rules(path: str, node: Node) -> Iterator[Rule]:
    for rule in node.get("x-kubernetes-validations", []):
        yield Rule(path, rule)
    for name, child in node.get("properties", {}).items():
        yield from _rules(f"{path}.{name}", child)
    if isinstance(node.get("items"), Mapping):
        yield from _rules(f"{path}[]", node["items"])


def _field_row(field: Field) -> str:
    name = field.path.rsplit(".", 1)[-1]
    kind = _type(field.node)
    below = _object_under(field.path, field.node)
    if below is not None:
        kind = f"[{kind}](#{anchor(below[0])})"
    default = _value(field.node["default"]) if "default" in field.node else ""
    cells = [
        _code(name),
        kind,
        "yes" if field.required else "",
        default,
        # An object's own rules are listed in its section, where the link leads.
        "; ".join(_constraints(field.node, rules=not _is_object(field.node))),
        str(field.node.get("description", "")),
    ]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _section(path: str, node: Node) -> list[str]:
    lines = [f"### {path}", ""]
    if "description" in node:
        lines += [str(node["description"]), ""]
    constraints = _constraints(node)
    lines += [f"- {c}" for c in constraints] + ([""] if constraints else [])
    lines += [
        "| field | type | required | default | constraints | description |",
        "| --- | --- | --- | --- | --- | --- |",
        *(_field_row(field) for field in _fields(path, node)),
        "",
    ]
    return lines


def render_api_reference(crd: Node, source: str = str(CRD_FILE)) -> str:
    """docs/api-reference.md for a CustomResourceDefinition (parsed YAML) with one version."""
    spec = crd["spec"]
    (version,) = spec["versions"]
    names = spec["names"]
    schema = version["schema"]["openAPIV3Schema"]
    kind = names["kind"]
    lines = [
        f"# {kind} {version['name']} API reference",
        "",
        f"<!-- Generated by `make generate` from operator/modelgate/api/ through {source}. "
        "Do not edit: change the models and regenerate. -->",
        "",
        str(schema.get("description", "")),
        "",
        "| | |",
        "| --- | --- |",
        f"| apiVersion | {_code(spec['group'] + '/' + version['name'])} |",
        f"| kind | {_code(kind)} |",
        f"| plural, singular | {_code(names['plural'])}, {_code(names['singular'])} |",
        f"| short names | {', '.join(_code(n) for n in names.get('shortNames', []))} |",
        f"| categories | {', '.join(_code(n) for n in names.get('categories', []))} |",
        f"| scope | {spec['scope']} |",
        f"| subresources | {', '.join(_code(s) for s in version.get('subresources', {}))} |",
        "",
        "Each section below lists the fields of one object. A path ending in `[]` is an item of a",
        "list. Defaults are filled in by the API server; constraints and rules are enforced by it,",
        "so an object that breaks them is rejected when it is applied.",
        "",
        "## Printer columns",
        "",
        f"What `kubectl get {names['plural']}` (`kubectl get {names['shortNames'][0]}`) shows.",
        "",
        "| column | type | JSONPath | description |",
        "| --- | --- | --- | --- |",
    ]
    for column in version.get("additionalPrinterColumns", []):
        name = column["name"] + (" (wide)" if column.get("priority", 0) > 0 else "")
        cells = [name, column["type"], _code(column["jsonPath"]), column.get("description", "")]
        lines.append("| " + " | ".join(_cell(str(c)) for c in cells) + " |")
    lines += ["", "## Top level", ""]
    top = {k: v for k, v in schema.items() if k != "properties"}
    lines += _section_table(kind, {**top, "properties": schema["properties"]})
    # A kind the operator only reads (a policy) has no status.
    parts = [part for part in ("spec", "status") if part in schema["properties"]]
    for part in parts:
        lines += [f"## {part.capitalize()} fields", ""]
        for path, node in _sections(part, schema["properties"][part]):
            lines += _section(path, node)
    lines += [
        "## Validation rules",
        "",
        "The CEL rules (`x-kubernetes-validations`) of the schema, with the message the API server",
        "returns when one does not hold. A message given as a CEL expression is computed from the",
        "object.",
        "",
        *_refusals_in_words(kind),
        "",
        "| on | rule | message | reported at |",
        "| --- | --- | --- | --- |",
    ]
    for part in parts:
        for found in _rules(part, schema["properties"][part]):
            field_path = found.rule.get("fieldPath")
            cells = [
                _code(found.path),
                _code(str(found.rule["rule"])),
                _message(found.rule),
                _code(found.path + field_path) if field_path else _code(found.path),
            ]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines).rstrip("\n") + "\n"


def _refusals_in_words(kind: str) -> list[str]:
    """What the API server says for each kind of check: why enums and patterns are CEL rules."""
    lines = [
        "The spec's enums and patterns are CEL rules as well, so that a refusal says in words what to",
        "write. The schema keeps the types, the required fields and the bounds of strings and lists: a",
        "value of the wrong type, a missing field or one over its bound is refused by the schema, after",
        'which the API server checks no CEL rule and adds "some validation rules were not checked".',
    ]
    if kind == KIND:
        hint = not_a_number("250ms", Unit.SECONDS)
        lines += [
            "`modelgate plan -f FILE` checks a file with the operator's models, which say what to write",
            f'where the schema cannot: `max: "250ms"` on a latency is refused with `{hint}`.',
        ]
    return lines


def _section_table(kind: str, schema: Node) -> list[str]:
    rows = []
    required = set(schema.get("required", []))
    for name, child in schema["properties"].items():
        kind_cell = _type(child)
        if _is_object(child):
            kind_cell = f"[{kind_cell}](#{anchor(name)})"
        description = child.get("description", "standard Kubernetes object metadata")
        cells = [_code(name), kind_cell, "yes" if name in required else "", str(description)]
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return [
        f"The fields of a {kind} object.",
        "",
        "| field | type | required | description |",
        "| --- | --- | --- | --- |",
        *rows,
        "",
    ]


# -- docs/metric-presets.md ------------------------------------------------------------------------
EXAMPLE_NAMESPACE = "serving"
EXAMPLE_INCUMBENT = "chat-v1"
EXAMPLE_CANDIDATE = "chat-v2"
EXAMPLE_ROUTE = "chat"
EXAMPLE_INTERVAL = "30s"
EXAMPLE_POD_REGEX = "chat-v2-.+"  # e.g. for pod names Kubernetes truncated
EXAMPLE_INTERVALS = ("500ms", "2s", "30s", "1m", "90s", "1.5m", "5m", "1h")
EXAMPLE_TEMPLATE = (
    'max(vllm:num_requests_waiting{namespace="{{ namespace }}",pod=~"{{ candidate.podRegex }}"})'
)
# What each variable of a custom query stands for; every variable of the template module needs one.
VARIABLE_MEANINGS: Mapping[str, str] = {
    "namespace": "the ModelRollout's namespace",
    "incumbent.deployment": "`spec.incumbent.deployment`",
    "candidate.deployment": "`spec.candidate.deployment`",
    "incumbent.podRegex": "`spec.incumbent.podRegex`, or the default for the incumbent",
    "candidate.podRegex": "`spec.candidate.podRegex`, or the default for the candidate",
    "target.deployment": "the side being evaluated: the candidate's Deployment, or the incumbent's "
    "when the metric compares (`compare`)",
    "target.podRegex": "the side being evaluated: the candidate's pod regex, or the incumbent's when "
    "the metric compares",
    "interval": f"the range window: max(`spec.analysis.interval`, {DEFAULT_MIN_WINDOW}), a PromQL duration",
    "incumbent.accelerators": "the incumbent's accelerators: `spec.analysis.accelerators.incumbent.count`, "
    "or what its Ready Pods request",
    "candidate.accelerators": "the candidate's accelerators, likewise",
    "target.accelerators": "the side being evaluated: the candidate's accelerators, or the incumbent's when "
    "the metric compares",
}
# Spec values a user might try in order to break out of a label matcher; each must be refused.
INJECTION_ATTEMPTS: Sequence[tuple[str, str]] = (
    ("candidate.podRegex", 'chat-v2.*"} or vector(0) or {pod=~".*'),
)
BROKEN_TEMPLATES = (
    'sum(up{pod=~"{{ candidate.pod_regex }}"})',
    'sum(up{pod=~"{{ candidate.podRegex }"})',
)


EXAMPLE_ACCELERATORS = (4.0, 8.0)  # incumbent, candidate
EXAMPLE_PRICES = (2.5, 2.5)


def example_context(**overrides: str) -> QueryContext:
    return QueryContext.for_rollout(
        overrides.get("namespace", EXAMPLE_NAMESPACE),
        EXAMPLE_INCUMBENT,
        EXAMPLE_CANDIDATE,
        overrides.get("interval", EXAMPLE_INTERVAL),
        candidate_pod_regex=overrides.get("candidate_pod_regex"),
        gateway_routes=(f"httproute/{EXAMPLE_ROUTE}",),
        backends=(EXAMPLE_INCUMBENT, EXAMPLE_CANDIDATE),
        accelerators=EXAMPLE_ACCELERATORS,
        prices=EXAMPLE_PRICES,
    )


def _promql(query: str) -> list[str]:
    return ["```promql", query, "```"]


def _example_context_block() -> list[str]:
    ctx = example_context()
    return [
        f"The examples on this page are rendered by the code for a ModelRollout in namespace "
        f"`{ctx.namespace}` with incumbent `{ctx.incumbent_deployment}`, candidate "
        f"`{ctx.candidate_deployment}` (each also the backendRef of HTTPRoute `{EXAMPLE_ROUTE}` that "
        f"reaches it) and `interval: {EXAMPLE_INTERVAL}` (window `{ctx.interval}`); the incumbent's "
        f"Pods request {how_many(ctx.incumbent_accelerators, 'accelerator')} in all and the candidate's "
        f"{ctx.candidate_accelerators:g}, at a price of {ctx.incumbent_price:g} an accelerator-hour.",
    ]


def _request_count_block() -> list[str]:
    return _promql(request_count_query(EXAMPLE_SOURCE, example_context()))


def _windows_block() -> list[str]:
    lines = [f"| `interval` | window: max(interval, {DEFAULT_MIN_WINDOW}) |", "| --- | --- |"]
    for interval in EXAMPLE_INTERVALS:
        lines.append(f"| `{interval}` | `{example_context(interval=interval).interval}` |")
    return lines


def _pod_regex_block() -> list[str]:
    ctx = example_context()
    custom = example_context(candidate_pod_regex=EXAMPLE_POD_REGEX)
    return [
        f"Default for `{EXAMPLE_CANDIDATE}`: `{ctx.candidate_pod_regex}`. With",
        f"`candidate: {{deployment: {EXAMPLE_CANDIDATE}, podRegex: '{EXAMPLE_POD_REGEX}'}}`,",
        "`errorRate` becomes:",
        "",
        *_promql(preset_query("errorRate", EXAMPLE_SOURCE, custom)),
    ]


def _variables_block() -> list[str]:
    ctx = example_context()
    missing = [name for name in TEMPLATE_VARIABLES if name not in VARIABLE_MEANINGS]
    if missing:
        raise ValueError(f"describe the query variables {missing} in VARIABLE_MEANINGS ({__name__})")
    lines = ["| variable | stands for | in the example |", "| --- | --- | --- |"]
    for name in TEMPLATE_VARIABLES:
        value = render_query("{{ " + name + " }}", ctx)
        lines.append(f"| `{{{{ {name} }}}}` | {VARIABLE_MEANINGS[name]} | {_cell(_code(value))} |")
    return lines


def _custom_query_block() -> list[str]:
    return [
        "```yaml",
        "- name: queue-depth",
        f"  query: '{EXAMPLE_TEMPLATE}'",
        "  max: 20",
        "```",
        "",
        "runs as",
        "",
        *_promql(render_query(EXAMPLE_TEMPLATE, example_context())),
    ]


def _refusals_block() -> list[str]:
    lines = []
    for field, value in INJECTION_ATTEMPTS:
        try:
            example_context(candidate_pod_regex=value)
        except QueryContextError as refused:
            lines += [f"- {_code(f'{field}: {value}')} is refused: {_code(str(refused))}"]
        else:
            raise ValueError(f"the injection example {value!r} was not refused")
    for template in BROKEN_TEMPLATES:
        try:
            render_query(template, example_context())
        except TemplateError as refused:
            lines += [f"- {_code(template)} is refused: {_code(str(refused))}"]
        else:
            raise ValueError(f"the broken template {template!r} was accepted")
    return lines


PRESET_BLOCKS: Mapping[str, Callable[[], list[str]]] = {
    "example-context": _example_context_block,
    "request-count": _request_count_block,
    "windows": _windows_block,
    "pod-regex": _pod_regex_block,
    "variables": _variables_block,
    "custom-query": _custom_query_block,
    "refusals": _refusals_block,
    "verdict-rules": verdict_rules_table,
    "verdict-effects": verdict_effects_table,
    "goodput": lambda: goodput_block(example_context()),
}

_BLOCK = re.compile(
    r"(?P<begin><!-- BEGIN GENERATED (?P<key>\S+) -->\n).*?(?P<end><!-- END GENERATED (?P=key) -->)",
    re.DOTALL,
)


def metric_preset_blocks() -> dict[str, str]:
    return _rendered(PRESET_BLOCKS)


def presets_by_source_blocks() -> dict[str, str]:
    return _rendered(preset_doc_blocks(example_context()))


def readme_blocks() -> dict[str, str]:
    return _rendered({"presets": functools.partial(readme_preset_table, example_context())})


def _rendered(blocks: Mapping[str, Callable[[], list[str]]]) -> dict[str, str]:
    return {key: "\n".join(render()) + "\n" for key, render in blocks.items()}


def fill_generated_blocks(text: str, blocks: Mapping[str, str], where: str) -> str:
    """`text` with the body of each generated block replaced; every block must appear exactly once."""
    seen: list[str] = []

    def replace(match: re.Match[str]) -> str:
        key = match.group("key")
        if key not in blocks:
            raise ValueError(f"{where}: unknown generated block {key!r}; known: {', '.join(blocks)}")
        seen.append(key)
        return match.group("begin") + blocks[key] + match.group("end")

    filled = _BLOCK.sub(replace, text)
    problems = [f"block {key!r} is missing" for key in blocks if key not in seen]
    problems += [f"block {key!r} appears {seen.count(key)} times" for key in set(seen) if seen.count(key) > 1]
    if problems:
        markers = "<!-- BEGIN GENERATED <key> --> ... <!-- END GENERATED <key> -->"
        raise ValueError(f"{where}: {'; '.join(sorted(problems))} (mark each with {markers})")
    return filled


# -- the command -----------------------------------------------------------------------------------
def generated_files(root: Path) -> dict[Path, str]:
    """Each generated file (relative to `root`) with the content it should have."""
    crd = yaml.load((root / CRD_FILE).read_text(), Loader=yaml.CSafeLoader)
    presets = (root / METRIC_PRESETS).read_text()
    by_source = (root / PRESETS_BY_SOURCE).read_text()
    readme = (root / README).read_text()
    chart_values = {
        "chart-values": "\n".join(values_table((root / CHART_VALUES).read_text())) + "\n",
        "chart-other-names": "\n".join(other_charts_table((root / CHART_OTHER_NAMES).read_text())) + "\n",
    }
    return {
        API_REFERENCE: render_api_reference(crd),
        EVALUATION_API_REFERENCE: render_api_reference(
            yaml.load((root / EVALUATION_CRD_FILE).read_text(), Loader=yaml.CSafeLoader),
            str(EVALUATION_CRD_FILE),
        ),
        **{
            reference: render_api_reference(
                yaml.load((root / crd_file).read_text(), Loader=yaml.CSafeLoader), str(crd_file)
            )
            for crd_file, reference in POLICY_REFERENCES
        },
        METRIC_PRESETS: fill_generated_blocks(presets, metric_preset_blocks(), str(METRIC_PRESETS)),
        PRESETS_BY_SOURCE: fill_generated_blocks(
            by_source, presets_by_source_blocks(), str(PRESETS_BY_SOURCE)
        ),
        README: fill_generated_blocks(readme, readme_blocks(), str(README)),
        CHART_README: fill_generated_blocks(
            (root / CHART_README).read_text(), chart_values, str(CHART_README)
        ),
        GETTING_STARTED: fill_generated_blocks(
            (root / GETTING_STARTED).read_text(),
            {"status-sample": "\n".join(status_sample(root)) + "\n"},
            str(GETTING_STARTED),
        ),
        ARCHITECTURE: fill_generated_blocks(
            (root / ARCHITECTURE).read_text(), _rendered({"modules": module_tables}), str(ARCHITECTURE)
        ),
    }


def stale_files(root: Path) -> list[Path]:
    stale = []
    for path, content in generated_files(root).items():
        target = root / path
        if not target.exists() or target.read_text() != content:
            stale.append(path)
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=REPO_ROOT, help="the repository (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file is stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files(args.root)
        for path in stale:
            print(f"{path} is out of date: run `{COMMAND}`", file=sys.stderr)
        return 1 if stale else 0
    for path, content in generated_files(args.root).items():
        target = args.root / path
        if not target.exists() or target.read_text() != content:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
