"""The curves of ``bench/scale.py`` against the number of load balancers, as an SVG.

Written by hand rather than with matplotlib: the figure is four small panels of lines,
which a few dozen lines of SVG draw, and the bench keeps needing nothing beyond the
project's own dependencies (matplotlib and its wheels would be an extra to install on
every machine that runs the bench, CI's smoke test included). An SVG is text: it diffs
in review and any browser shows it.

Panels: API p50 (solid) and p99 (dashed) of each operation (log scale), load balancers
ACTIVE per second (build and full resync), resident memory of each process, and the
seconds of a full resync. The x axis is the size, on a log scale.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

WIDTH, HEIGHT = 1100, 720
PANEL_W, PANEL_H = 300, 220  # the plotting area of one panel; its key to the right
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")
OPERATIONS = ("create", "show", "tenant_list", "admin_full_list")
MEMORY = {"serve_api_mb": "serve (API)", "serve_worker_mb": "serve's worker",
          "node_agent_mb": "node agent", "haproxy_max_mb": "largest HAProxy"}  # fmt: skip

Point = tuple[float, float]


@dataclass(frozen=True)
class Series:
    label: str
    points: list[Point]
    colour: str
    dashed: bool = False


@dataclass(frozen=True)
class Scale:
    low: float
    high: float
    log: bool

    def fraction(self, value: float) -> float:
        if self.high == self.low:
            return 0.5
        if self.log:
            return (math.log10(value) - math.log10(self.low)) / (
                math.log10(self.high) - math.log10(self.low)
            )
        return (value - self.low) / (self.high - self.low)

    def ticks(self) -> list[float]:
        if self.log:
            first, last = math.floor(math.log10(self.low)), math.ceil(math.log10(self.high))
            return [10.0**e for e in range(first, last + 1)]
        step = _nice_step((self.high - self.low) / 4)
        return [self.low + step * k for k in range(int((self.high - self.low) / step) + 1)]


def _nice_step(rough: float) -> float:
    if rough <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(rough))
    return next(m * power for m in (1.0, 2.0, 2.5, 5.0, 10.0) if m * power >= rough)


def _scale(values: Sequence[float], log: bool) -> Scale:
    """Round bounds around ``values``: decades when ``log``, from 0 otherwise."""
    if log:
        positive = [v for v in values if v > 0] or [1.0]
        low = 10.0 ** math.floor(math.log10(min(positive)))
        return Scale(low, max(10.0 ** math.ceil(math.log10(max(positive))), low * 10), True)
    step = _nice_step(max(values, default=1.0) / 4 or 0.25)
    return Scale(0.0, step * math.ceil(max(values, default=1.0) / step or 1), False)


def _label(value: float) -> str:
    if value >= 1000 and value == int(value):
        return f"{int(value):,}"
    return f"{value:g}"


def panel(
    x0: float, y0: float, title: str, unit: str, series: list[Series], log_y: bool
) -> list[str]:
    """One panel with its plotting area's top-left corner at (x0, y0)."""
    points = [p for s in series for p in s.points]
    heading = f"{title} ({unit})"
    out = [f'<text x="{x0}" y="{y0 - 12}" class="title">{escape(heading)}</text>']
    if not points:
        out.append(f'<text x="{x0 + 20}" y="{y0 + PANEL_H / 2}">no figures</text>')
        return out
    xs = _scale([p[0] for p in points], log=True)
    ys = _scale([p[1] for p in points], log=log_y)

    def at(p: Point) -> tuple[float, float]:
        return (x0 + xs.fraction(p[0]) * PANEL_W, y0 + (1 - ys.fraction(p[1])) * PANEL_H)

    out.append(f'<rect x="{x0}" y="{y0}" width="{PANEL_W}" height="{PANEL_H}" class="frame"/>')
    for tick in ys.ticks():
        y = y0 + (1 - ys.fraction(tick)) * PANEL_H
        out.append(f'<line x1="{x0}" x2="{x0 + PANEL_W}" y1="{y:.1f}" y2="{y:.1f}" class="grid"/>')
        out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" class="tick" text-anchor="end">'
                   f"{_label(tick)}</text>")  # fmt: skip
    for size in sorted({p[0] for p in points}):
        x = x0 + xs.fraction(size) * PANEL_W
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y0}" y2="{y0 + PANEL_H}" class="grid"/>')
        out.append(f'<text x="{x:.1f}" y="{y0 + PANEL_H + 16}" class="tick" '
                   f'text-anchor="middle">{_label(size)}</text>')  # fmt: skip
    for k, one in enumerate(series):
        out.extend(_line(one, at, (x0 + PANEL_W + 10, y0 + 6 + 15 * k)))
    return out


def _line(one: Series, at: Callable[[Point], tuple[float, float]], key: Point) -> list[str]:
    """A series' polyline, its markers, and its entry in the panel's key at ``key``."""
    dash = ' stroke-dasharray="6 4"' if one.dashed else ""
    coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in map(at, one.points))
    out = [f'<polyline points="{coords}" fill="none" stroke="{one.colour}" '
           f'stroke-width="2"{dash}/>']  # fmt: skip
    for x, y in map(at, one.points):
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{one.colour}"/>')
    kx, ky = key
    out.append(f'<line x1="{kx}" x2="{kx + 18}" y1="{ky}" y2="{ky}" stroke="{one.colour}" '
               f'stroke-width="2"{dash}/>')  # fmt: skip
    out.append(f'<text x="{kx + 22}" y="{ky + 4}" class="key">{escape(one.label)}</text>')
    return out


def _series(sizes: list[dict[str, Any]], *path: str) -> list[Point]:
    """(size, value) for each size holding a number at ``path`` (keys, outermost first)."""
    points = []
    for size in sizes:
        value: Any = size
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, int | float):
            points.append((float(size["load_balancers"]), float(value)))
    return points


def _resync_rates(sizes: list[dict[str, Any]]) -> list[Point]:
    """Load balancers re-converged per second in each full resync."""
    done = dict(_series(sizes, "resync", "reconverged"))
    return [(n, done[n] / s) for n, s in _series(sizes, "resync", "all_reconverged_seconds")
            if n in done and s > 0]  # fmt: skip


def _latencies(sizes: list[dict[str, Any]]) -> list[Series]:
    out = []
    for k, name in enumerate(OPERATIONS):
        part = "create" if name == "create" else "api"
        for pct, dashed in (("p50_ms", False), ("p99_ms", True)):
            points = _series(sizes, part, name, pct)
            label = f"{name} {pct[:3]}"
            out.append(Series(label, points, COLOURS[k], dashed))
    return out


def svg(figures: dict[str, Any]) -> str:
    sizes: list[dict[str, Any]] = figures.get("sizes", [])
    rates = [
        Series("build", _series(sizes, "converge", "active_per_second"), COLOURS[0]),
        Series("full resync", _resync_rates(sizes), COLOURS[1]),
    ]
    memory = [
        Series(label, _series(sizes, "memory", key), COLOURS[i])
        for i, (key, label) in enumerate(MEMORY.items())
    ]
    resync = [
        Series("all re-converged", _series(sizes, "resync", "all_reconverged_seconds"),
               COLOURS[0]),
        Series("serve answering", _series(sizes, "resync", "serve_answering_seconds"),
               COLOURS[1]),
    ]  # fmt: skip
    body = [
        *panel(70, 70, "API latency, p50 solid, p99 dashed", "ms, log scale",
               _latencies(sizes), log_y=True),
        *panel(620, 70, "load balancers ACTIVE per second", "LB/s", rates, log_y=False),
        *panel(70, 400, "resident memory per process", "MB", memory, log_y=False),
        *panel(620, 400, "full resync after a restart", "s", resync, log_y=False),
    ]  # fmt: skip
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
        "<style>.title{font-size:13px;font-weight:bold}.tick{fill:#444}.key{fill:#222}"
        ".frame{fill:none;stroke:#888}.grid{stroke:#ddd}</style>",
        '<rect width="100%" height="100%" fill="white"/>',
        *body,
        f'<text x="70" y="{HEIGHT - 24}" class="tick">{escape(_caption(figures))}</text>',
        f'<text x="70" y="{HEIGHT - 8}" class="tick">x: load balancers (log scale)</text>',
        "</svg>",
    ])  # fmt: skip


def _caption(figures: dict[str, Any]) -> str:
    loads = [s["load_average"][0] for s in figures.get("sizes", []) if "load_average" in s]
    during = f", load average {min(loads):.1f}-{max(loads):.1f} at the measures" if loads else ""
    return (f"bench/scale.py, {figures.get('date', '?')}, {figures.get('cpus', '?')} cores"
            f"{during}; {figures.get('setup', '')}")  # fmt: skip


def write_plot(figures: dict[str, Any], path: Path) -> None:
    path.write_text(svg(figures) + "\n")
