"""Inline SVG charts for the HTML report: drawn as text, no script and no library, so the report
opens offline in any browser and stays small. Every label goes through html.escape (rank, op
and report names come from the user's files). Each shape carries a <title>: the browser shows
its exact figure on hover, without script.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from html import escape

NEUTRAL = "#f4f4f4"  # a cell whose value is 0: nothing happened there, not "a little late"
MISSING = "#ffffff"
FONT = 'font-family="system-ui,sans-serif" font-size="11"'


def _fmt(value: float) -> str:
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:,.0f}"


def _svg(width: float, height: float, body: list[str], label: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(label)}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" width="{width:.0f}" height="{height:.0f}" '
        f"{FONT}>" + "".join(body) + "</svg>"
    )


def _text(x: float, y: float, text: str, anchor: str = "start", extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {extra}>{escape(text)}</text>'


def ramp(value: float, top: float, hue: tuple[int, int, int]) -> str:
    """White-grey at 0 to `hue` at `top`: zero is the neutral colour, never the ramp's middle."""
    if not value > 0 or top <= 0:
        return NEUTRAL
    t = min(1.0, value / top)
    start = (0xFD, 0xE8, 0xE0) if hue[0] > hue[2] else (0xE3, 0xEC, 0xF7)
    rgb = [round(a + (b - a) * t) for a, b in zip(start, hue, strict=True)]
    return "#" + "".join(f"{c:02x}" for c in rgb)


def _every(count: int, most: int) -> int:
    return max(1, -(-count // most))


def heatmap(
    rows: Sequence[str],
    columns: Sequence[str],
    grid: Sequence[Sequence[float | None]],
    top: float,
    hue: tuple[int, int, int],
    label: str,
    unit: str = "ms",
    edge_columns: Sequence[int] = (),
    floor: float = 0.0,
) -> str:
    """One cell per (row, column), 0 in the neutral colour, None blank; `edge_columns` are
    hatched (the window's edges, not judged); values from `floor` on are written in their
    cells (below it, noise). Meant for a few dozen rows at most."""
    cell_w = max(14.0, min(40.0, 640 / max(1, len(columns))))
    cell_h = 18.0 if len(rows) <= 24 else 10.0
    left, top_pad = 70.0, 10.0
    width = left + cell_w * len(columns) + 120
    height = top_pad + cell_h * len(rows) + 40
    # One page holds several heatmaps: each its own hatch pattern id (ids are page-wide).
    hatch = "edge-" + hashlib.sha256(f"{label}|{hue}".encode()).hexdigest()[:10]
    body = [f'<defs><pattern id="{hatch}" width="6" height="6" patternUnits="userSpaceOnUse">'
            '<path d="M0,6 l6,-6" stroke="#bbb" stroke-width="1"/></pattern></defs>']  # fmt: skip
    for i, (name, values) in enumerate(zip(rows, grid, strict=True)):
        y = top_pad + i * cell_h
        if len(rows) <= 24 or i % _every(len(rows), 24) == 0:
            body.append(_text(left - 6, y + cell_h * 0.7, name, "end"))
        for j, value in enumerate(values):
            x = left + j * cell_w
            fill = MISSING if value is None else ramp(value, top, hue)
            tip = f"{name}, step {columns[j]}: " + ("no data" if value is None else
                                                  f"{_fmt(value)} {unit}")  # fmt: skip
            body.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{cell_w - 1:.1f}" height="{cell_h - 1:.1f}"'
                f' fill="{fill}"><title>{escape(tip)}</title></rect>'
            )
            if j in edge_columns:
                body.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{cell_w - 1:.1f}" '
                            f'height="{cell_h - 1:.1f}" fill="url(#{hatch})"/>')  # fmt: skip
            elif value is not None and value >= floor and cell_w >= 28 and cell_h >= 18:
                body.append(_text(x + cell_w / 2 - 0.5, y + cell_h * 0.7, _fmt(value), "middle",
                                  'font-size="9"'))  # fmt: skip
    base = top_pad + cell_h * len(rows)
    for j, name in enumerate(columns):
        if j % _every(len(columns), 30) == 0:
            body.append(_text(left + j * cell_w + cell_w / 2, base + 14, name, "middle"))
    body.append(_text(left + cell_w * len(columns) / 2, base + 32, "step", "middle"))
    key_x = left + cell_w * len(columns) + 16
    for k, (value, name) in enumerate([(0.0, "0"), (top / 2, _fmt(top / 2)), (top, _fmt(top))]):
        y = top_pad + k * 20
        body.append(f'<rect x="{key_x:.1f}" y="{y:.1f}" width="14" height="14" '
                    f'fill="{ramp(value, top, hue)}" stroke="#ccc"/>')  # fmt: skip
        body.append(_text(key_x + 20, y + 11, f"{name} {unit}"))
    return _svg(width, height, body, label)


Series = tuple[str, str, Sequence[float | None], str]  # name, colour, values, dash ("" solid)


def _axes(
    body: list[str], box: tuple[float, float, float, float], top: float, unit: str, log: bool
) -> None:
    left, y0, width, height = box
    body.append(f'<rect x="{left}" y="{y0}" width="{width}" height="{height}" fill="none" '
                'stroke="#999"/>')  # fmt: skip
    ticks = _log_ticks(top) if log else [top * k / 4 for k in range(5)]
    for value in ticks:
        y = y0 + height - _scale(value, top, log) * height
        body.append(f'<line x1="{left}" x2="{left + width}" y1="{y:.1f}" y2="{y:.1f}" '
                    'stroke="#eee"/>')  # fmt: skip
        body.append(_text(left - 4, y + 4, _fmt(value), "end"))
    body.append(_text(12, y0 + height / 2, unit, "middle",
                      f'transform="rotate(-90 12 {y0 + height / 2:.1f})"'))  # fmt: skip


def _log_ticks(top: float) -> list[float]:
    high = math.ceil(math.log10(max(top, 1e-3)))
    return [10.0**k for k in range(high - 4, high + 1)]


def _scale(value: float, top: float, log: bool) -> float:
    if top <= 0:
        return 0.0
    if not log:
        return max(0.0, min(1.0, value / top))
    low = math.log10(max(top, 1e-3)) - 4
    return max(0.0, min(1.0, (math.log10(max(value, 1e-9)) - low) / (math.log10(top) - low)))


def lines(
    xs: Sequence[str],
    series: Sequence[Series],
    label: str,
    unit: str,
    log: bool = False,
    marks: Sequence[int] = (),
    shaded: Sequence[int] = (),
) -> str:
    """Series over categories (steps, message sizes) on one axis; `marks` ring the points of
    the first series at those indexes (flagged), `shaded` greys columns (the window's edges)."""
    per_x = 56.0 if len(xs) <= 13 else 24.0  # room for a size's label ("256 KiB") under it
    left, y0, width, height = 56.0, 10.0, max(360.0, min(760.0, per_x * len(xs))), 200.0
    values = [v for _, _, vs, _ in series for v in vs if v is not None]
    top = max(values, default=1.0) * (1.0 if log else 1.1) or 1.0
    if log:
        top = 10.0 ** math.ceil(math.log10(max(top, 1e-3)))
    body: list[str] = []
    step = width / max(1, len(xs))
    for j in shaded:
        body.append(f'<rect x="{left + j * step:.1f}" y="{y0}" width="{step:.1f}" '
                    f'height="{height}" fill="#f0f0f0"><title>window edge: not judged</title>'
                    "</rect>")  # fmt: skip
    _axes(body, (left, y0, width, height), top, unit, log)

    def point(j: int, v: float) -> tuple[float, float]:
        return left + (j + 0.5) * step, y0 + height - _scale(v, top, log) * height

    for k, (name, colour, vs, dash) in enumerate(series):
        pts = [(j, v) for j, v in enumerate(vs) if v is not None]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (point(j, v) for j, v in pts))
        style = f' stroke-dasharray="{dash}"' if dash else ""
        body.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                    f'stroke-width="2"{style}/>')  # fmt: skip
        for j, v in pts if len(xs) <= 120 else []:
            x, y = point(j, v)
            ring = k == 0 and j in marks
            body.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{5 if ring else 2.5}" fill="{colour}"'
                + (' stroke="#d62728" stroke-width="3"' if ring else "")
                + f"><title>{escape(f'{name} at {xs[j]}: {_fmt(v)} {unit}')}</title></circle>"
            )
    for j, name in enumerate(xs):
        if j % _every(len(xs), 24) == 0:
            body.append(_text(left + (j + 0.5) * step, y0 + height + 14, name, "middle"))
    legend_y = y0 + height + 34
    x = left
    for name, colour, _, dash in series:
        style = f' stroke-dasharray="{dash}"' if dash else ""
        body.append(f'<line x1="{x}" x2="{x + 18}" y1="{legend_y - 4}" y2="{legend_y - 4}" '
                    f'stroke="{colour}" stroke-width="2"{style}/>')  # fmt: skip
        body.append(_text(x + 22, legend_y, name))
        x += 30 + 6.5 * len(name)
    return _svg(max(left + width + 10, x), legend_y + 10, body, label)


def stacked_bars(
    rows: Sequence[tuple[str, dict[str, float]]],
    parts: Sequence[tuple[str, str, str]],
    label: str,
    unit: str = "ms",
) -> str:
    """One horizontal bar per row, split into `parts` (key, name, colour); a legend below."""
    left, bar_h, width = 150.0, 20.0, 560.0
    total = max((sum(v.values()) for _, v in rows), default=0.0) or 1.0
    body: list[str] = []
    for i, (name, values) in enumerate(rows):
        y = 8 + i * (bar_h + 6)
        body.append(_text(left - 6, y + bar_h * 0.7, name, "end"))
        x = left
        for key, part, colour in parts:
            value = values.get(key, 0.0)
            w = value / total * width
            if w <= 0:
                continue
            tip = f"{name}: {part} {_fmt(value)} {unit}"
            body.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{bar_h}" '
                        f'fill="{colour}"><title>{escape(tip)}</title></rect>')  # fmt: skip
            x += w
        body.append(_text(x + 4, y + bar_h * 0.7, f"{_fmt(sum(values.values()))} {unit}"))
    legend_y = 8 + len(rows) * (bar_h + 6) + 16
    x = left
    for _, part, colour in parts:
        body.append(f'<rect x="{x:.1f}" y="{legend_y - 10:.1f}" width="12" height="12" '
                    f'fill="{colour}"/>')  # fmt: skip
        body.append(_text(x + 16, legend_y, part))
        x += 30 + 6.8 * len(part)
    return _svg(max(left + width + 80, x), legend_y + 10, body, label)
