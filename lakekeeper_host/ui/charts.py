"""Small SVG charts drawn on the server: no script, no library, readable without JavaScript."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from markupsafe import Markup, escape

from lakekeeper_host.ui.formatting import timestamp

PALETTE = ("#2563c9", "#1f8a4c", "#c27c0e", "#6d4bc4", "#c23b32")


def _nice_maximum(value: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten that is at least ``value`` (an axis top)."""
    if value <= 0:
        return 1
    magnitude = 1.0
    while magnitude * 10 <= value:
        magnitude *= 10
    while magnitude > value:
        magnitude /= 10
    for step in (1, 2, 5, 10):
        if step * magnitude >= value:
            return step * magnitude
    return 10 * magnitude  # pragma: no cover


def line_chart(
    series: Sequence[tuple[str, Sequence[tuple[int, float]]]],
    *,
    chart_id: str,
    title: str,
    value_format: Callable[[Any], str] = str,
    width: int = 560,
    height: int = 170,
) -> Markup:
    """Lines over time, one per ``(name, [(epoch ms, value), ...])``; each point has a tooltip with its
    time and value. An empty chart says so instead of drawing nothing."""
    points = [point for _, values in series for point in values]
    if not points:
        return Markup('<div class="chart empty" id="{}"><h4>{}</h4><p class="muted">No data yet.</p></div>').format(
            chart_id, title)
    left, right, top, bottom = 64, 14, 12, 28
    plot_w, plot_h = width - left - right, height - top - bottom
    first, last = min(p[0] for p in points), max(p[0] for p in points)
    top_value = _nice_maximum(max(p[1] for p in points))

    def x(ms: int) -> float:
        return left + (plot_w / 2 if last == first else plot_w * (ms - first) / (last - first))

    def y(value: float) -> float:
        return top + plot_h * (1 - value / top_value)

    parts = [f'<svg viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}" '
             f'preserveAspectRatio="xMidYMid meet">']
    for fraction in (0, 0.5, 1):
        gy = top + plot_h * (1 - fraction)
        parts.append(f'<line class="grid-line" x1="{left}" x2="{width - right}" y1="{gy:.1f}" y2="{gy:.1f}"/>')
        parts.append(f'<text class="axis-label" x="{left - 6}" y="{gy + 4:.1f}" text-anchor="end">'
                     f'{escape(value_format(top_value * fraction))}</text>')
    parts.append(f'<text class="axis-label" x="{left}" y="{height - 8}">{escape(timestamp(first))}</text>')
    if last != first:
        parts.append(f'<text class="axis-label" x="{width - right}" y="{height - 8}" text-anchor="end">'
                     f'{escape(timestamp(last))}</text>')
    for index, (name, values) in enumerate(series):
        color = PALETTE[index % len(PALETTE)]
        ordered = sorted(values)
        if len(ordered) > 1:
            path = " ".join(f"{x(ms):.1f},{y(v):.1f}" for ms, v in ordered)
            parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>')
        for ms, value in ordered:
            tip = f"{timestamp(ms)} · {name}: {value_format(value)}"
            parts.append(f'<circle class="point" cx="{x(ms):.1f}" cy="{y(value):.1f}" r="3" fill="{color}" '
                         f'data-value="{value}"><title>{escape(tip)}</title></circle>')
    parts.append("</svg>")
    legend = "".join(
        f'<span><i style="background:{PALETTE[i % len(PALETTE)]}"></i>{escape(name)}</span>'
        for i, (name, _) in enumerate(series)) if len(series) > 1 else ""
    return Markup(f'<figure class="chart" id="{escape(chart_id)}"><h4>{escape(title)}</h4>{"".join(parts)}'
                  f'{f"<figcaption class=legend>{legend}</figcaption>" if legend else ""}</figure>')
