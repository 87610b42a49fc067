"""A page as headless Chromium renders it (Debian's `chromium`, installed by `make apt-deps`), read
back as numbers: the SVG charts of `modelgate report`, inverted through their own axis ticks."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path


def rendered_dom(page: Path, *options: str) -> str:
    """The DOM after Chromium loaded the file (no network: the page must need none)."""
    chromium = shutil.which("chromium")
    assert chromium is not None, "chromium is not installed: `make apt-deps` installs it"
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            *options,
            "--dump-dom",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout


@dataclass
class Chart:
    """One <svg> of the page: its class, its y ticks (pixel y -> value), and its other elements."""

    css: str
    ticks: dict[float, float] = field(default_factory=dict)
    elements: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    def value_at(self, y: float) -> float:
        """The value drawn at pixel `y` (the axis is linear between its ticks)."""
        (y0, v0), (y1, v1) = sorted(self.ticks.items())[0], sorted(self.ticks.items())[-1]
        return v0 + (y - y0) * (v1 - v0) / (y1 - y0)

    def path_values(self, css: str) -> list[float]:
        """The values a <path class=css> passes through (its M, L and V commands' y)."""
        d = next(attrs["d"] for tag, attrs in self.elements if tag == "path" and attrs.get("class") == css)
        ys = [float(y) for y in re.findall(r"[ML][\d.]+,([\d.]+)", d)]
        ys += [float(y) for y in re.findall(r"V([\d.]+)", d)]
        return [round(self.value_at(y), 6) for y in ys]

    def with_class(self, css: str) -> list[dict[str, str]]:
        return [attrs for _, attrs in self.elements if css in attrs.get("class", "").split()]


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.charts: list[Chart] = []
        self.text: list[str] = []
        self._in_svg = False
        self._tick: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "svg":
            self.charts.append(Chart(values.get("class", "")))
            self._in_svg = True
        elif self._in_svg:
            chart = self.charts[-1]
            if "y-tick" in values.get("class", ""):
                self._tick = values["data-value"]
            elif tag == "line" and self._tick is not None:
                chart.ticks[float(values["y1"])] = float(self._tick)
                self._tick = None
            chart.elements.append((tag, values))

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self._in_svg = False

    def handle_data(self, data: str) -> None:
        if not self._in_svg:
            self.text.append(data)


@dataclass
class RenderedPage:
    charts: list[Chart]
    text: str

    def chart(self, css: str) -> Chart:
        return next(c for c in self.charts if c.css == css)


def read_page(page: Path) -> RenderedPage:
    parser = _Page()
    parser.feed(rendered_dom(page))
    return RenderedPage(parser.charts, " ".join(" ".join(parser.text).split()))


# Run in a copy of the page (which has no script of its own): each selector's first element's box.
_MEASURE = """<script>addEventListener("load", () => {
  const boxes = {};
  for (const selector of %s) {
    const found = document.querySelector(selector);
    if (found) { const r = found.getBoundingClientRect(); boxes[selector] = [r.top, r.bottom]; }
  }
  document.body.setAttribute("data-boxes", JSON.stringify(boxes));
});</script>"""


def element_boxes(page: Path, selectors: list[str], width: int = 1400, height: int = 1000) -> dict[str, Box]:
    """Where each selector's first element lies, in CSS pixels from the top of a `width` x `height`
    window, as Chromium laid the page out; a selector that matched nothing is absent."""
    measured = page.with_name(f"measured-{page.name}")
    script = _MEASURE % json.dumps(selectors)
    measured.write_text(page.read_text(encoding="utf-8").replace("</body>", script + "</body>"))
    dom = rendered_dom(measured, f"--window-size={width},{height}")
    found = re.search(r'data-boxes="([^"]*)"', dom)
    assert found is not None, "the measuring script did not run"
    return {k: Box(*v) for k, v in json.loads(html.unescape(found.group(1))).items()}


@dataclass(frozen=True)
class Box:
    top: float
    bottom: float
