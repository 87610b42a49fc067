"""A page as headless Chromium renders it (Debian's `chromium`, installed by `make apt-deps`), read
back as numbers: the Vega views of `modelgate report`, each mark's SVG inverted through the scales
Vega drew it with (the page leaves them in each chart's `data-scales`)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

# Chromium's virtual clock runs until the page is idle or this budget is spent: Vega draws after
# the load event, and --dump-dom waits for the budget.
RENDER_BUDGET_MS = 20000
SCREEN = (1400, 1000)  # a laptop's first screen, in CSS pixels
# What a report's first screen must hold, in this order: the outcome, the weights, the breach.
STORY = ("p.outcome", '[data-chart="weights"] svg', "h2.breached", '[data-chart="metric error-rate"] svg')


def rendered_dom(page: Path, *options: str) -> str:
    """The DOM once Chromium loaded the file and ran its scripts (no network: the page needs none)."""
    chromium = shutil.which("chromium")
    assert chromium is not None, "chromium is not installed: `make apt-deps` installs it"
    done = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--virtual-time-budget={RENDER_BUDGET_MS}",
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


_TRANSLATE = re.compile(r"translate\(([-\d.e]+),([-\d.e]+)\)")
_POINT = re.compile(r"([MLHVZ])([-\d.e]*)(?:,([-\d.e]+))?")


@dataclass
class Item:
    """One drawn item of a mark: its tag, attributes and text."""

    tag: str
    attrs: dict[str, str]
    text: str = ""

    @property
    def at(self) -> tuple[float, float]:
        """Its translation: where a rule, a symbol or a text is placed."""
        found = _TRANSLATE.search(self.attrs.get("transform", ""))
        return (float(found.group(1)), float(found.group(2))) if found else (0.0, 0.0)

    def path(self) -> list[tuple[float, float] | None]:
        """The pixels a path passes through, None where it breaks (a move after the first)."""
        points: list[tuple[float, float] | None] = []
        x = y = 0.0
        for command, first, second in _POINT.findall(self.attrs.get("d", "")):
            if command == "Z":
                continue
            if command == "M" and points:
                points.append(None)
            if command in "ML":
                x, y = float(first), float(second)
            elif command == "H":
                x = float(first)
            else:
                y = float(first)
            points.append((x, y))
        return points


@dataclass
class Chart:
    """One Vega view of the page: its scales (domain and range of x, in ms, and of y) and its
    marks' items by the mark's name (a layer `candidate` draws the mark `candidate_marks`)."""

    name: str
    scales: dict[str, dict[str, list[float]]]
    marks: dict[str, list[Item]] = field(default_factory=dict)

    def value_at(self, y: float) -> float:
        return _invert(self.scales["y"], y)

    def time_at(self, x: float) -> float:
        """Unix seconds."""
        return _invert(self.scales["x"], x) / 1000

    def items(self, mark: str) -> list[Item]:
        return self.marks.get(f"{mark}_marks", [])

    def series(self, mark: str) -> list[tuple[float, float]]:
        """A line's (time, value) points, in the order drawn (breaks left out)."""
        return [
            (round(self.time_at(p[0]), 3), round(self.value_at(p[1]), 9))
            for item in self.items(mark)
            for p in item.path()
            if p is not None
        ]

    def values(self, mark: str) -> list[float]:
        return [v for _, v in self.series(mark)]

    def rule_values(self, mark: str) -> list[float]:
        """The values horizontal rules (bounds) are drawn at."""
        return [round(self.value_at(item.at[1]), 9) for item in self.items(mark)]

    def rule_times(self, mark: str) -> list[float]:
        """The times vertical rules (steps, rollbacks) are drawn at."""
        return [self.time_at(item.at[0]) for item in self.items(mark)]

    def texts(self, mark: str) -> list[str]:
        return [item.text for item in self.items(mark)]


def _invert(scale: dict[str, list[float]], pixel: float) -> float:
    (d0, d1), (r0, r1) = scale["domain"][:2], scale["range"][:2]
    return d0 + (pixel - r0) * (d1 - d0) / (r1 - r0)


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.charts: list[Chart] = []
        self.text: list[str] = []
        self.attributes: dict[str, str] = {}  # <body>'s
        self._chart_depth = 0  # open <div>s since a chart's
        self._marks: list[str | None] = []  # the mark each open <g> is (None: not a mark)
        self._skip = False  # inside <script> or <style>
        self._item: Item | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "body":
            self.attributes = values
        if tag in ("script", "style"):
            self._skip = True
        if tag == "div" and "data-chart" in values:
            self.charts.append(Chart(values["data-chart"], json.loads(values.get("data-scales", "{}"))))
            self._chart_depth = 1
        elif tag == "div" and self._chart_depth:
            self._chart_depth += 1
        elif tag == "g" and self._chart_depth:
            names = [c for c in values.get("class", "").split() if c.endswith("_marks")]
            self._marks.append(names[0] if "role-mark" in values.get("class", "") and names else None)
        elif self._chart_depth and self._marks and self._marks[-1] is not None:
            self._item = Item(tag, values)
            self.charts[-1].marks.setdefault(self._marks[-1], []).append(self._item)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._skip = False
        elif tag == "div" and self._chart_depth:
            self._chart_depth -= 1
        elif tag == "g" and self._chart_depth and self._marks:
            self._marks.pop()
        self._item = None

    def handle_data(self, data: str) -> None:
        if self._item is not None:
            self._item.text += data
        elif not self._chart_depth and not self._skip:
            self.text.append(data)


@dataclass
class RenderedPage:
    charts: list[Chart]
    text: str  # outside the charts, as one line
    boxes: dict[str, Box]  # where the measured selectors' elements lie on the first screen
    charts_rendered: int  # as the page's script counted them

    def chart(self, name: str) -> Chart:
        return next(c for c in self.charts if c.name == name)


# Run in a copy of the page once its charts are drawn: each selector's first element's box.
_MEASURE = """<script>(() => {
  const measure = () => {
    const boxes = {};
    for (const selector of %s) {
      const found = document.querySelector(selector);
      if (found) { const r = found.getBoundingClientRect(); boxes[selector] = [r.top, r.bottom]; }
    }
    document.body.setAttribute("data-boxes", JSON.stringify(boxes));
  };
  if (document.body.dataset.chartsRendered) measure();
  else document.addEventListener("charts-rendered", measure);
})();</script>"""


def read_page(page: Path, measure: list[str] | tuple[str, ...] = ()) -> RenderedPage:
    """The page as Chromium drew it in a window of SCREEN size, once Vega drew its charts, with
    the boxes of the `measure` selectors' first elements (a selector that matched nothing is
    absent). One Chromium run."""
    measured = page.with_name(f"measured-{page.name}")
    script = _MEASURE % json.dumps(list(measure))
    before, body_end, after = page.read_text(encoding="utf-8").rpartition("</body>")
    measured.write_text(before + script + body_end + after)  # the last: the bundle may say "</body>"
    parser = _Page()
    parser.feed(rendered_dom(measured, f"--window-size={SCREEN[0]},{SCREEN[1]}"))
    boxes = json.loads(html.unescape(parser.attributes.get("data-boxes", "{}")))
    return RenderedPage(
        parser.charts,
        " ".join(" ".join(parser.text).split()),
        {k: Box(*v) for k, v in boxes.items()},
        int(parser.attributes.get("data-charts-rendered") or 0),
    )


@dataclass(frozen=True)
class Box:
    top: float
    bottom: float
