"""Small SVG charts drawn on the server: no script, no library, readable without JavaScript."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from markupsafe import Markup, escape

from lakekeeper_host.ui.formatting import timestamp

PALETTE = ("#2563c9", "#1f8a4c", "#c27c0e", "#6d4bc4", "#c23b32")


def _nice_maximum(value: float, base: int = 10) -> float:
    """The smallest 1, 2 or 5 times a power of ten that is at least ``value`` (an axis top); with
    ``base=1024`` the same in KiB, MiB, ... (sizes)."""
    if value <= 0:
        return 1
    if base == 1024:
        unit = 1.0
        while value / unit >= 1024:
            unit *= 1024
        return _nice_maximum(value / unit) * unit
    magnitude = 1.0
    while magnitude * 10 <= value:
        magnitude *= 10
    while magnitude > value:
        magnitude /= 10
    for step in (1, 2, 5, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude  # pragma: no cover


def _ticks(top: float, value_format: Callable[[Any], str]) -> list[float]:
    """0, the middle and the top of the axis; the middle only where it reads differently from both."""
    middle = top / 2
    labels = {value_format(0), value_format(top)}
    return [0, middle, top] if value_format(middle) not in labels else [0, top]


def _frame(title: str, width: int, height: int, left: int, top: int, plot_w: float, plot_h: float, top_value: float,
           value_format: Callable[[Any], str]) -> list[str]:
    """The SVG opening, the horizontal grid with value labels, ticks where the time axis starts and ends."""
    parts = [f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" '
             f'preserveAspectRatio="xMidYMid meet">']
    for value in _ticks(top_value, value_format):
        gy = top + plot_h * (1 - value / top_value)
        parts.append(f'<line class="grid-line" x1="{left}" x2="{left + plot_w}" y1="{gy:.1f}" y2="{gy:.1f}"/>')
        parts.append(f'<text class="axis-label" x="{left - 6}" y="{gy + 4:.1f}" text-anchor="end">'
                     f'{escape(value_format(value))}</text>')
    parts.append(f'<line class="axis-tick" x1="{left}" x2="{left}" y1="{top + plot_h}" y2="{top + plot_h + 5}"/>')
    parts.append(f'<line class="axis-tick" x1="{left + plot_w}" x2="{left + plot_w}" y1="{top + plot_h}" '
                 f'y2="{top + plot_h + 5}"/>')
    return parts


def _figure(chart_id: str, title: str, parts: list[str], names: Sequence[str], colors: Sequence[str],
            first: int, last: int) -> Markup:
    """The chart with its title, the time range it covers (in the console's timestamp format, below the
    axis, where long labels cannot collide) and a legend for more than one series."""
    legend = "".join(f'<span><i style="background:{colors[i % len(colors)]}"></i>{escape(name)}</span>'
                     for i, name in enumerate(names)) if len(names) > 1 else ""
    span = f"{timestamp(first)} – {timestamp(last)}" if last != first else timestamp(first)
    return Markup(f'<figure class="chart" id="{escape(chart_id)}"><h4>{escape(title)}</h4>{"".join(parts)}'
                  f'<figcaption><span class="range">{escape(span)}</span>'
                  f'{f"<span class=legend>{legend}</span>" if legend else ""}</figcaption></figure>')


def _empty(chart_id: str, title: str) -> Markup:
    return Markup('<div class="chart empty" id="{}"><h4>{}</h4><p class="muted">No data yet.</p></div>').format(
        chart_id, title)


def line_chart(
    series: Sequence[tuple[str, Sequence[tuple[int, float]]]],
    *,
    chart_id: str,
    title: str,
    value_format: Callable[[Any], str] = str,
    width: int = 420,
    height: int = 170,
    min_span_ms: int = 0,
    base: int = 10,
    colors: Sequence[str] = PALETTE,
) -> Markup:
    """Lines over time, one per ``(name, [(epoch ms, value), ...])``, each point with a tooltip of its
    time and value and the last one labelled; the time axis covers at least ``min_span_ms`` up to the
    last point. An empty chart says so instead of drawing nothing."""
    points = [point for _, values in series for point in values]
    if not points:
        return _empty(chart_id, title)
    left, right, top, bottom = 62, 70, 14, 14
    plot_w, plot_h = width - left - right, height - top - bottom
    last = max(p[0] for p in points)
    first = min(min(p[0] for p in points), last - min_span_ms)
    top_value = _nice_maximum(max(p[1] for p in points), base)

    def x(ms: int) -> float:
        return left + (plot_w / 2 if last == first else plot_w * (ms - first) / (last - first))

    def y(value: float) -> float:
        return top + plot_h * (1 - value / top_value)

    parts = _frame(title, width, height, left, top, plot_w, plot_h, top_value, value_format)
    for index, (name, values) in enumerate(series):
        color = colors[index % len(colors)]
        ordered = sorted(values)
        if len(ordered) > 1:
            path = " ".join(f"{x(ms):.1f},{y(v):.1f}" for ms, v in ordered)
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>')
        for ms, value in ordered:
            tip = f"{timestamp(ms)} · {name}: {value_format(value)}"
            parts.append(f'<circle class="point" cx="{x(ms):.1f}" cy="{y(value):.1f}" r="3.5" fill="{color}" '
                         f'data-value="{value}"><title>{escape(tip)}</title></circle>')
        if ordered:
            ms, value = ordered[-1]
            parts.append(f'<text class="value-label" x="{x(ms) + 7:.1f}" y="{y(value) + 4:.1f}" fill="{color}">'
                         f'{escape(value_format(value))}</text>')
    parts.append("</svg>")
    return _figure(chart_id, title, parts, [name for name, _ in series], colors, first, last)


def bar_chart(
    series: Sequence[tuple[str, Sequence[tuple[int, float]]]],
    *,
    chart_id: str,
    title: str,
    bucket_ms: int,
    value_format: Callable[[Any], str] = str,
    width: int = 860,
    height: int = 180,
    min_span_ms: int = 0,
    colors: Sequence[str] = PALETTE,
) -> Markup:
    """Stacked bars per time bucket (``bucket_ms`` wide), one colour per ``(name, [(bucket start ms,
    value), ...])``, each bar with a tooltip; the time axis covers at least ``min_span_ms``."""
    points = [point for _, values in series for point in values]
    if not points:
        return _empty(chart_id, title)
    left, right, top, bottom = 62, 16, 14, 14
    plot_w, plot_h = width - left - right, height - top - bottom
    last = max(p[0] for p in points) + bucket_ms
    first = min(min(p[0] for p in points), last - max(min_span_ms, bucket_ms))
    stacks: dict[int, float] = {}
    for ms, value in points:
        stacks[ms] = stacks.get(ms, 0) + value
    top_value = _nice_maximum(max(stacks.values()))
    bar_w = max(2.0, plot_w * bucket_ms / (last - first) - 2)

    def x(ms: int) -> float:
        return left + plot_w * (ms - first) / (last - first)

    parts = _frame(title, width, height, left, top, plot_w, plot_h, top_value, value_format)
    base: dict[int, float] = {}
    for index, (name, values) in enumerate(series):
        color = colors[index % len(colors)]
        for ms, value in sorted(values):
            if not value:
                continue
            below = base.get(ms, 0)
            y_top = top + plot_h * (1 - (below + value) / top_value)
            bar_h = plot_h * value / top_value
            base[ms] = below + value
            tip = f"{timestamp(ms)} · {name}: {value_format(value)}"
            parts.append(f'<rect class="bar-rect" x="{x(ms) + 1:.1f}" y="{y_top:.1f}" width="{bar_w:.1f}" '
                         f'height="{bar_h:.1f}" fill="{color}" data-value="{value}">'
                         f'<title>{escape(tip)}</title></rect>')
    parts.append("</svg>")
    return _figure(chart_id, title, parts, [name for name, _ in series], colors, first, last)
