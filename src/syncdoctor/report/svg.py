"""Charts as inline SVG strings: heatmap, line chart, bar chart and lane timeline. Pure: no I/O.

Every function takes plain data and returns one ``<svg>`` element that renders without scripts (tooltips
are SVG ``<title>`` children). Every text and attribute value is escaped. The root carries
``data-chart=KIND`` and an ``id``; the drawn items carry ``data-*`` attributes (``data-cell``,
``data-point``, ``data-bar``, ``data-lane``, ``data-span``) with their values, so tests and tools can
count and read them, and ``data-highlight="true"`` marks the culprit (the slow node, the straggler, the
rank that failed first). Callers aggregate large inputs first (:mod:`syncdoctor.report.aggregate`): these
functions draw what they are given.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape

__all__ = [
    "PALETTE",
    "Bar",
    "Lane",
    "Span",
    "bar_chart",
    "color_scale",
    "heatmap",
    "line_chart",
    "nice_ticks",
    "timeline",
]

# Okabe-Ito: distinguishable with the common colour-vision deficiencies
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#7F7F7F", "#000000")
HIGHLIGHT = "#C62828"
_MUTED = "#9E9E9E"
_GRID = "#E0E0E0"
_FLAG = ' data-highlight="true"'
_BOLD = ' font-weight="700"'
_BOLD_RED = f' font-weight="700" fill="{HIGHLIGHT}"'
_STOPS = ((215, 48, 39), (254, 224, 139), (26, 152, 80))  # bad, middle, good


def _a(value: object) -> str:
    """An attribute value, escaped (quotes included)."""
    return escape(str(value), quote=True)


def _t(value: object) -> str:
    """Element text, escaped."""
    return escape(str(value), quote=False)


def _n(value: float) -> str:
    """A coordinate: one decimal, no trailing zeros."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _open(kind: str, chart_id: str, width: float, height: float, title: str, extra: str = "") -> str:
    label = f"{chart_id}-title"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" id="{_a(chart_id)}" data-chart="{_a(kind)}" '
        f'viewBox="0 0 {_n(width)} {_n(height)}" width="{_n(width)}" height="{_n(height)}" role="img" '
        f'aria-labelledby="{_a(label)}" class="chart"{extra}><title id="{_a(label)}">{_t(title)}</title>'
    )


def color_scale(fraction: float, *, good_high: bool = True) -> str:
    """A colour from red (bad) through yellow to green (good) for ``fraction`` in 0..1."""
    f = min(max(fraction if math.isfinite(fraction) else 0.0, 0.0), 1.0)
    if not good_high:
        f = 1.0 - f
    low, high, t = (_STOPS[0], _STOPS[1], f * 2) if f < 0.5 else (_STOPS[1], _STOPS[2], f * 2 - 1)
    r, g, b = (round(lo + (hi - lo) * t) for lo, hi in zip(low, high, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering ``low``..``high`` (1, 2 or 5 times a power of ten)."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low] if math.isfinite(low) else [0.0]
    raw = (high - low) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step - 1e-9) * step
    ticks: list[float] = []
    value = first
    while value <= high + step * 1e-9 and len(ticks) < 50:
        ticks.append(round(value, 12))
        value += step
    return ticks


# --- heatmap ---------------------------------------------------------------------------------------


def _quality(value: float, bottom: float, top: float, good_high: bool) -> float:
    """0 (worst) .. 1 (best) as a ratio to the best value: value/best for bandwidth, best/value for latency."""
    if good_high:
        return value / top if top > 0 else 0.0
    return bottom / value if value > 0 else 1.0


def heatmap(
    values: Sequence[Sequence[float | None]],
    row_labels: Sequence[str],
    col_labels: Sequence[str],
    *,
    chart_id: str,
    title: str,
    format_value: Callable[[float], str] = lambda v: f"{v:.3g}",
    good_high: bool = True,
    highlight_rows: Sequence[int] = (),
    highlight_cells: Sequence[tuple[int, int]] = (),
    cell_titles: Sequence[Sequence[str | None]] | None = None,
    max_size: float = 640.0,
    neutral_diagonal: bool = False,
) -> str:
    """A matrix of coloured cells, rows = sources, columns = destinations; ``None`` cells are grey.

    Colours are relative to the largest value (``good_high``: large is good, as for bandwidth; else small
    is good, as for latency). Values are printed inside cells that are large enough; every cell has a
    tooltip. ``highlight_rows`` outlines the culprit node's row and marks its row and column cells;
    ``highlight_cells`` marks single (row, column) cells, such as the two directions of a slow link.
    ``neutral_diagonal``: the diagonal (a node to itself: another kind of link) is drawn in a neutral colour
    and left out of the colour scale, unless it is all there is.
    """
    rows, cols = len(values), max((len(r) for r in values), default=0)
    finite = [v for i, row in enumerate(values) for j, v in enumerate(row)
              if v is not None and math.isfinite(v) and not (neutral_diagonal and i == j)]
    if not finite:
        neutral_diagonal = False
        finite = [v for row in values for v in row if v is not None and math.isfinite(v)]
    top = max(finite, default=0.0)
    bottom = min(finite, default=0.0)
    cell = max(6.0, min(52.0, max_size / max(rows, cols, 1)))
    show_labels_every = max(1, math.ceil(12 / cell))
    label_w = min(150.0, 8 + 7 * max((len(s) for s in row_labels), default=4)) if cell >= 6 else 0
    top_h = min(110.0, 8 + 6 * max((len(s) for s in col_labels), default=4))
    legend_h = 40
    width = label_w + cols * cell + 12
    height = top_h + rows * cell + legend_h
    out = [_open("heatmap", chart_id, max(width, 330), height, title,
                 f' data-rows="{rows}" data-cols="{cols}"')]
    out.append(f'<g font-size="{_n(min(11, max(cell * 0.5, 8)))}" fill="#333">')
    for j, label in enumerate(col_labels):
        if j % show_labels_every:
            continue
        x = label_w + (j + 0.5) * cell
        out.append(f'<text x="{_n(x)}" y="{_n(top_h - 4)}" transform="rotate(-60 {_n(x)} {_n(top_h - 4)})">'
                   f"{_t(label)}</text>")
    for i, label in enumerate(row_labels):
        if i % show_labels_every:
            continue
        y = top_h + (i + 0.5) * cell + 4
        out.append(f'<text x="{_n(label_w - 4)}" y="{_n(y)}" text-anchor="end">{_t(label)}</text>')
    out.append("</g><g>")
    highlighted = set(highlight_rows)
    hot_cells = set(highlight_cells)
    for i, row in enumerate(values):
        for j, value in enumerate(row):
            x, y = label_w + j * cell, top_h + i * cell
            tip = (cell_titles[i][j] if cell_titles is not None and cell_titles[i][j] else None) or (
                f"{row_labels[i]} -> {col_labels[j]}: " + ("not measured" if value is None else format_value(value))
            )
            hot = i in highlighted or j in highlighted or (i, j) in hot_cells
            if value is None or not math.isfinite(value):
                fill, data = "#EEEEEE", 'data-value=""'
            elif neutral_diagonal and i == j:
                fill, data = "#CFD8DC", f'data-value="{value:.6g}" data-diagonal="true"'
            else:
                fill = color_scale(_quality(value, bottom, top, good_high))
                data = f'data-value="{value:.6g}"'
            out.append(
                f'<rect data-cell="{i},{j}" {data}{_FLAG if hot else ""} x="{_n(x)}" '
                f'y="{_n(y)}" width="{_n(cell - 1)}" height="{_n(cell - 1)}" fill="{fill}">'
                f"<title>{_t(tip)}</title></rect>"
            )
            if value is not None and math.isfinite(value) and cell >= 40:
                out.append(f'<text x="{_n(x + cell / 2 - 0.5)}" y="{_n(y + cell / 2 + 3)}" font-size="9" '
                           f'text-anchor="middle" pointer-events="none">{_t(format_value(value))}</text>')
    for i, j in sorted(hot_cells):
        if i < rows and j < cols:
            out.append(f'<rect x="{_n(label_w + j * cell - 1)}" y="{_n(top_h + i * cell - 1)}" width="{_n(cell + 1)}" '
                       f'height="{_n(cell + 1)}" fill="none" stroke="{HIGHLIGHT}" stroke-width="2"/>')
    for i in sorted(highlighted):
        if i < rows:
            out.append(f'<rect x="{_n(label_w - 1)}" y="{_n(top_h + i * cell - 1)}" width="{_n(cols * cell + 1)}" '
                       f'height="{_n(cell + 1)}" fill="none" stroke="{HIGHLIGHT}" stroke-width="2"/>')
    out.append("</g>")
    # legend: from the worst to the best value
    ly = top_h + rows * cell + 10
    steps = 10
    for k in range(steps):
        out.append(f'<rect x="{_n(label_w + k * 12)}" y="{_n(ly)}" width="12" height="10" '
                   f'fill="{color_scale(k / (steps - 1))}"/>')
    worst, best = (bottom, top) if good_high else (top, bottom)
    span = f"worst {format_value(worst)}, best {format_value(best)}" if finite else "nothing measured"
    out.append(f'<text x="{_n(label_w + steps * 12 + 6)}" y="{_n(ly + 9)}" font-size="10" fill="#555">'
               f"{_t(span)}</text>")
    keys = "grey: not measured" + ("; grey-blue: within a node" if neutral_diagonal else "")
    out.append(f'<text x="{_n(label_w)}" y="{_n(ly + 23)}" font-size="10" fill="#555">{_t(keys)}</text>')
    out.append("</svg>")
    return "".join(out)


# --- line chart ------------------------------------------------------------------------------------


def line_chart(
    series: Mapping[str, Sequence[tuple[float, float]]],
    *,
    chart_id: str,
    title: str,
    x_label: str,
    y_label: str,
    log_x: bool = True,
    format_x: Callable[[float], str] = lambda v: f"{v:g}",
    format_y: Callable[[float], str] = lambda v: f"{v:.3g}",
    dashed: Sequence[str] = (),
    width: float = 460.0,
    height: float = 260.0,
) -> str:
    """One polyline with points per series; x on a log2 scale when ``log_x`` (sizes), y linear from 0."""
    left, right, top, bottom = 62.0, 12.0, 26.0, 42.0
    points = [(x, y) for pts in series.values() for x, y in pts if math.isfinite(x) and math.isfinite(y)]
    if log_x:
        points = [(x, y) for x, y in points if x > 0]
    xs = [x for x, _ in points] or [1.0]
    ys = [y for _, y in points] or [0.0]

    def fx(value: float) -> float:
        return math.log2(value) if log_x else value

    x_lo, x_hi = fx(min(xs)), fx(max(xs))
    if x_hi <= x_lo:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    y_hi = max(ys) * 1.08 if max(ys) > 0 else 1.0
    plot_w, plot_h = width - left - right, height - top - bottom

    def px(value: float) -> float:
        return left + (fx(value) - x_lo) / (x_hi - x_lo) * plot_w

    def py(value: float) -> float:
        return top + plot_h - value / y_hi * plot_h

    out = [_open("line", chart_id, width, height, title, f' data-series-count="{len(series)}"')]
    out.append(f'<text x="{_n(left)}" y="14" font-size="12" font-weight="600">{_t(title)}</text>')
    out.append('<g font-size="10" fill="#555">')
    for tick in nice_ticks(0.0, y_hi, 4):
        y = py(tick)
        out.append(f'<line x1="{_n(left)}" x2="{_n(left + plot_w)}" y1="{_n(y)}" y2="{_n(y)}" stroke="{_GRID}"/>')
        out.append(f'<text x="{_n(left - 4)}" y="{_n(y + 3)}" text-anchor="end">{_t(format_y(tick))}</text>')
    if log_x:
        lo_exp, hi_exp = math.ceil(x_lo - 1e-9), math.floor(x_hi + 1e-9)
        stride = max(1, math.ceil((hi_exp - lo_exp + 1) / 8))
        x_ticks = [2.0 ** e for e in range(lo_exp, hi_exp + 1, stride)]
    else:
        x_ticks = nice_ticks(x_lo, x_hi, 6)
    for tick in x_ticks:
        x = px(tick)
        out.append(f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{_n(top)}" y2="{_n(top + plot_h)}" stroke="{_GRID}"/>')
        out.append(f'<text x="{_n(x)}" y="{_n(top + plot_h + 13)}" text-anchor="middle">{_t(format_x(tick))}</text>')
    out.append(f'<text x="{_n(left + plot_w / 2)}" y="{_n(height - 6)}" text-anchor="middle">{_t(x_label)}</text>')
    out.append(f'<text x="12" y="{_n(top + plot_h / 2)}" text-anchor="middle" '
               f'transform="rotate(-90 12 {_n(top + plot_h / 2)})">{_t(y_label)}</text>')
    out.append(f'<rect x="{_n(left)}" y="{_n(top)}" width="{_n(plot_w)}" height="{_n(plot_h)}" fill="none" '
               f'stroke="#BDBDBD"/></g>')
    for index, (name, pts) in enumerate(series.items()):
        color = PALETTE[index % len(PALETTE)]
        valid = sorted((x, y) for x, y in pts if math.isfinite(x) and math.isfinite(y) and (x > 0 or not log_x))
        dash = ' stroke-dasharray="5 3"' if name in dashed else ""
        out.append(f'<g data-series="{_a(name)}" data-points="{len(valid)}">')
        if len(valid) > 1:
            coords = " ".join(f"{_n(px(x))},{_n(py(y))}" for x, y in valid)
            out.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
        for x, y in valid:
            out.append(f'<circle data-point="{_a(name)}" data-x="{x:.6g}" data-y="{y:.6g}" cx="{_n(px(x))}" '
                       f'cy="{_n(py(y))}" r="3" fill="{color}"><title>{_t(name)} at {_t(format_x(x))}: '
                       f"{_t(format_y(y))}</title></circle>")
        out.append("</g>")
        lx = left + 8 + (index % 3) * 120
        ly = top + 12 + (index // 3) * 14
        out.append(f'<line x1="{_n(lx)}" x2="{_n(lx + 16)}" y1="{_n(ly - 4)}" y2="{_n(ly - 4)}" stroke="{color}" '
                   f'stroke-width="2"{dash}/><text x="{_n(lx + 20)}" y="{_n(ly)}" font-size="10">{_t(name)}</text>')
    out.append("</svg>")
    return "".join(out)


# --- bar chart -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bar:
    """One horizontal bar from ``start`` to ``value``; ``title`` is its tooltip."""

    label: str
    value: float
    start: float = 0.0
    highlight: bool = False
    title: str = ""


def bar_chart(
    bars: Sequence[Bar],
    *,
    chart_id: str,
    title: str,
    x_label: str,
    format_value: Callable[[float], str] = lambda v: f"{v:.3g}",
    threshold: float | None = None,
    threshold_label: str = "",
    width: float = 620.0,
) -> str:
    """Horizontal bars, one row per item in the given order; highlighted bars are red, a dashed line marks
    ``threshold``."""
    label_w = min(170.0, 10 + 6.5 * max((len(b.label) for b in bars), default=4))
    value_w = 64.0
    top, row, bottom = 24.0, 18.0, 34.0
    plot_w = width - label_w - value_w - 10
    values = [b.value for b in bars if math.isfinite(b.value)] + [b.start for b in bars if math.isfinite(b.start)]
    if threshold is not None:
        values.append(threshold)
    hi = max(values, default=1.0) or 1.0
    lo = min(0.0, *values) if values else 0.0
    height = top + row * len(bars) + bottom

    def px(value: float) -> float:
        return label_w + (value - lo) / (hi - lo) * plot_w if hi > lo else label_w

    out = [_open("bar", chart_id, width, height, title, f' data-bars="{len(bars)}"')]
    out.append(f'<text x="4" y="14" font-size="12" font-weight="600">{_t(title)}</text>')
    out.append('<g font-size="10" fill="#555">')
    for tick in nice_ticks(lo, hi, 5):
        x = px(tick)
        out.append(f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{_n(top)}" y2="{_n(top + row * len(bars))}" '
                   f'stroke="{_GRID}"/><text x="{_n(x)}" y="{_n(top + row * len(bars) + 12)}" '
                   f'text-anchor="middle">{_t(format_value(tick))}</text>')
    out.append(f'<text x="{_n(label_w + plot_w / 2)}" y="{_n(height - 4)}" text-anchor="middle">{_t(x_label)}</text>')
    out.append("</g>")
    for index, bar in enumerate(bars):
        y = top + index * row
        start, end = (bar.start, bar.value) if bar.value >= bar.start else (bar.value, bar.start)
        x0, x1 = px(start), px(end)
        color = HIGHLIGHT if bar.highlight else PALETTE[0]
        tip = bar.title or f"{bar.label}: {format_value(bar.value)}"
        flag = ' data-highlight="true"' if bar.highlight else ""
        out.append(
            f'<g data-bar="{_a(bar.label)}" data-value="{bar.value:.6g}"{flag}><title>{_t(tip)}</title>'
            f'<text x="{_n(label_w - 6)}" y="{_n(y + 12)}" font-size="11" text-anchor="end"'
            f'{_BOLD if bar.highlight else ""}>{_t(bar.label)}</text>'
            f'<rect x="{_n(x0)}" y="{_n(y + 3)}" width="{_n(max(x1 - x0, 1.5))}" height="{_n(row - 6)}" '
            f'fill="{color}"/><text x="{_n(max(x1, x0 + 1.5) + 4)}" y="{_n(y + 12)}" font-size="10" '
            f'fill="#333">{_t(format_value(bar.value))}</text></g>'
        )
    if threshold is not None and math.isfinite(threshold):
        x = px(threshold)
        out.append(f'<line data-threshold="{threshold:.6g}" x1="{_n(x)}" x2="{_n(x)}" y1="{_n(top - 4)}" '
                   f'y2="{_n(top + row * len(bars))}" stroke="{HIGHLIGHT}" stroke-dasharray="4 3"/>'
                   f'<text x="{_n(x + 3)}" y="{_n(top - 6)}" font-size="10" fill="{HIGHLIGHT}">'
                   f"{_t(threshold_label)}</text>")
    out.append("</svg>")
    return "".join(out)


# --- timeline --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lane:
    """One row of a timeline (a rank, or the ranks summarised together)."""

    label: str
    highlight: bool = False
    title: str = ""


@dataclass(frozen=True)
class Span:
    """Something on ``lane`` from ``start`` to ``end`` (seconds on the chart's axis); a point when
    ``end`` is None or equal to ``start``. ``kind`` picks the colour from the legend."""

    lane: int
    start: float
    end: float | None
    kind: str
    label: str
    highlight: bool = False


def timeline(
    lanes: Sequence[Lane],
    spans: Sequence[Span],
    *,
    chart_id: str,
    title: str,
    x_label: str,
    colors: Mapping[str, str],
    format_x: Callable[[float], str] = lambda v: f"{v:g} s",
    width: float = 860.0,
) -> str:
    """Lanes (rows) over a shared time axis; spans as bars, points as diamonds, the culprit lanes in red.

    ``colors`` maps each kind to its colour and is drawn as the legend (in its order).
    """
    label_w = min(190.0, 12 + 6.5 * max((len(lane.label) for lane in lanes), default=6))
    top, row, bottom = 40.0, 20.0, 34.0
    plot_w = width - label_w - 16
    times = [s.start for s in spans] + [s.end for s in spans if s.end is not None]
    times = [t for t in times if math.isfinite(t)]
    lo, hi = (min(times), max(times)) if times else (0.0, 1.0)
    if hi - lo < 1e-6:
        lo, hi = lo - 0.5, hi + 0.5
    pad = (hi - lo) * 0.02
    lo, hi = lo - pad, hi + pad
    height = top + row * len(lanes) + bottom

    def px(value: float) -> float:
        return label_w + (value - lo) / (hi - lo) * plot_w

    out = [_open("timeline", chart_id, width, height, title, f' data-lanes="{len(lanes)}"')]
    out.append(f'<text x="4" y="14" font-size="12" font-weight="600">{_t(title)}</text>')
    x = label_w
    for kind, color in colors.items():
        out.append(f'<rect x="{_n(x)}" y="21" width="10" height="10" fill="{color}"/>'
                   f'<text x="{_n(x + 13)}" y="30" font-size="10">{_t(kind)}</text>')
        x += 20 + 6 * len(kind)
    for index, lane in enumerate(lanes):
        y = top + index * row
        fill = "#FDECEA" if lane.highlight else ("#FAFAFA" if index % 2 else "#FFFFFF")
        flag = ' data-highlight="true"' if lane.highlight else ""
        out.append(f'<g data-lane="{_a(lane.label)}"{flag}><title>{_t(lane.title or lane.label)}</title>'
                   f'<rect x="0" y="{_n(y)}" width="{_n(width)}" height="{_n(row)}" fill="{fill}"/>'
                   f'<text x="{_n(label_w - 6)}" y="{_n(y + 14)}" font-size="11" text-anchor="end"'
                   f'{_BOLD_RED if lane.highlight else ""}>'
                   f"{_t(lane.label)}</text></g>")
    out.append('<g font-size="10" fill="#555">')
    for tick in nice_ticks(lo, hi, 8):
        x = px(tick)
        out.append(f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{_n(top)}" y2="{_n(top + row * len(lanes))}" '
                   f'stroke="{_GRID}"/><text x="{_n(x)}" y="{_n(top + row * len(lanes) + 12)}" '
                   f'text-anchor="middle">{_t(format_x(tick))}</text>')
    out.append(f'<text x="{_n(label_w + plot_w / 2)}" y="{_n(height - 4)}" text-anchor="middle">{_t(x_label)}</text>')
    out.append("</g>")
    for span in spans:
        if not 0 <= span.lane < len(lanes) or not math.isfinite(span.start):
            continue
        y = top + span.lane * row
        color = colors.get(span.kind, _MUTED)
        flag = ' data-highlight="true"' if span.highlight else ""
        stroke = f' stroke="{HIGHLIGHT}" stroke-width="2"' if span.highlight else ""
        head = (f'<g data-span="{_a(span.kind)}" data-lane-index="{span.lane}" data-start="{span.start:.6g}"'
                f'{flag}><title>{_t(span.label)}</title>')
        if span.end is None or not math.isfinite(span.end) or span.end - span.start <= (hi - lo) * 0.004:
            cx, cy = px(span.start), y + row / 2
            out.append(f'{head}<path d="M{_n(cx)} {_n(cy - 6)}L{_n(cx + 6)} {_n(cy)}L{_n(cx)} {_n(cy + 6)}'
                       f'L{_n(cx - 6)} {_n(cy)}Z" fill="{color}"{stroke}/></g>')
        else:
            x0, x1 = px(span.start), px(span.end)
            out.append(f'{head}<rect x="{_n(x0)}" y="{_n(y + 4)}" width="{_n(max(x1 - x0, 2))}" '
                       f'height="{_n(row - 8)}" rx="2" fill="{color}" fill-opacity="0.85"{stroke}/></g>')
    out.append("</svg>")
    return "".join(out)
