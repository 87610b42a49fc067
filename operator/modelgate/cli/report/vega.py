"""Vega-Lite specs drawn by vl-convert (Vega's own renderer, with its JavaScript bundled): the page's
script and the PNG. vl-convert is the `report` extra (about 33 MB; the operator never draws):
without it, `modelgate report` and `--png` stop with INSTALL_HINT."""

from __future__ import annotations

import functools
from pathlib import Path
from types import ModuleType
from typing import Any

from modelgate.cli.report.charts import VEGA_LITE, png_chart
from modelgate.cli.report.timeline import Timeline

INSTALL_HINT = "drawing the report's charts needs vl-convert: pip install 'modelgate-operator[report]'"
PNG_SCALE = 2  # pixels per CSS pixel: sharp on high-density screens and in documents

# Run in the page once the bundle has loaded: every element with data-spec becomes an interactive
# view (SVG, tooltips, no actions menu). When all are drawn, each carries its scales (data-scales:
# what a pixel means, for whoever reads the SVG back) and <body> gets data-charts-rendered.
_EMBED = """
const charts = Array.from(document.querySelectorAll("[data-spec]"));
const scales = (view) => Object.fromEntries(["x", "y"].map((name) => {
  const scale = view.scale(name);
  return [name, {domain: scale.domain().map(Number), range: scale.range()}];
}));
Promise.all(charts.map(async (chart) => {
  const drawn = await vegaEmbed(chart, JSON.parse(chart.dataset.spec),
    {renderer: "svg", actions: false, tooltip: {theme: "light"}});
  chart.dataset.scales = JSON.stringify(scales(drawn.view));
})).then(() => {
  document.body.dataset.chartsRendered = String(charts.length);
  document.dispatchEvent(new Event("charts-rendered"));
});
"""


class MissingRenderer(RuntimeError):
    """vl-convert is not installed."""


def check_renderer() -> None:
    """Raises MissingRenderer (saying how to install it) without vl-convert."""
    _vl_convert()


def page_script() -> str:
    """Vega, Vega-Lite and vega-embed with the page's embedding code: one inline script, so the
    page needs no network."""
    check_renderer()
    return _bundle()


@functools.cache
def _bundle() -> str:  # about 0.9 MB, 2 s to bundle: once per process
    return str(_vl_convert().javascript_bundle(_EMBED, vl_version=VEGA_LITE))


def png(spec: dict[str, Any]) -> bytes:
    return bytes(_vl_convert().vegalite_to_png(spec, vl_version=VEGA_LITE, scale=PNG_SCALE))


def write_png(timeline: Timeline, path: Path) -> None:
    """The timeline's charts, one under the other, under its outcome."""
    path.write_bytes(png(png_chart(timeline)))


def _vl_convert() -> ModuleType:
    try:
        import vl_convert  # only drawing needs it
    except ImportError:
        raise MissingRenderer(INSTALL_HINT) from None
    return vl_convert
