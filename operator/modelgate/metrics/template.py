"""Variables in user-written PromQL: `{{ candidate.podRegex }}` and friends.

A deliberately small substitution, not a template language: each `{{ name }}` is replaced by a
value from a validated `QueryContext`, so a rendered query contains nothing from the spec that
could not also appear in a preset.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from modelgate.metrics.context import QueryContext, Side, promql_number

# Variable name -> how to read it from the context and the side being evaluated ("target": the
# candidate, or the incumbent when a metric compares). Names follow the spec's camelCase.
_VARIABLES: Mapping[str, Callable[[QueryContext, Side], str]] = {
    "namespace": lambda ctx, _: ctx.namespace,
    "incumbent.deployment": lambda ctx, _: ctx.incumbent_deployment,
    "candidate.deployment": lambda ctx, _: ctx.candidate_deployment,
    "incumbent.podRegex": lambda ctx, _: ctx.incumbent_pod_regex,
    "candidate.podRegex": lambda ctx, _: ctx.candidate_pod_regex,
    "target.deployment": lambda ctx, side: ctx.deployment(side),
    "target.podRegex": lambda ctx, side: ctx.pod_regex(side),
    "interval": lambda ctx, _: ctx.interval,
    "incumbent.accelerators": lambda ctx, _: promql_number(ctx.incumbent_accelerators),
    "candidate.accelerators": lambda ctx, _: promql_number(ctx.candidate_accelerators),
    "target.accelerators": lambda ctx, side: promql_number(ctx.accelerators(side)),
}
TEMPLATE_VARIABLES = tuple(_VARIABLES)

_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")


class TemplateError(ValueError):
    """A query template that cannot be rendered."""


def render_query(template: str, ctx: QueryContext, side: Side = "candidate") -> str:
    """Substitute every `{{ variable }}`; unknown or malformed placeholders raise TemplateError."""

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in _VARIABLES:
            raise TemplateError(
                f"unknown variable {name!r} in query {template!r}; "
                f"known variables: {', '.join(TEMPLATE_VARIABLES)}"
            )
        return _VARIABLES[name](ctx, side)

    rendered = _PLACEHOLDER.sub(substitute, template)
    # Substituted values never contain braces, so a `{{` left over is a broken placeholder
    # such as `{{ candidate.podRegex }`, which would otherwise surface as a PromQL parse error.
    if "{{" in rendered:
        raise TemplateError(f"unterminated variable in query {template!r}: expected `{{{{ name }}}}`")
    return rendered
