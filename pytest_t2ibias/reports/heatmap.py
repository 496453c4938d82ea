"""The IS matrix as a heatmap (BiasConnect Fig. 3): a rich terminal table and a PIL PNG.

Rows are the mitigated axis x, columns the affected axis y. Negative IS (mitigating x pushes
y away from its ideal) is red, positive green; every cell carries its interval. Both
renderers take an ``ISMatrix`` or its plain-builtins form (``matrix_figure``), which is what
check verdicts carry in ``figures["matrix"]`` so reports can draw it.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..figures import matrix_figure
from ..metrics import ISMatrix

if TYPE_CHECKING:
    from PIL import Image

NEGATIVE = (178, 24, 43)
NEUTRAL = (247, 247, 247)
POSITIVE = (26, 152, 80)
EMPTY = (220, 220, 220)
CELL_W, CELL_H = 150, 60
LABEL_W, TITLE_H, LEGEND_H = 130, 40, 50


def _cells(matrix: ISMatrix | Mapping[str, Any]) -> tuple[Any, Any, Any, Any]:
    figure = matrix_figure(matrix)
    return figure["axes"], figure["value"], figure["low"], figure["high"]


def diverging_colour(value: float | None, scale: float = 1.0) -> tuple[int, int, int]:
    """Red for negative, green for positive, near-white at zero; grey when undefined."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return EMPTY
    t = max(-1.0, min(1.0, value / scale)) if scale > 0 else 0.0
    end = POSITIVE if t > 0 else NEGATIVE
    weight = abs(t) ** 0.7 if t else 0.0
    red, green, blue = (round(n + (e - n) * weight) for n, e in zip(NEUTRAL, end))
    return red, green, blue


def render_terminal(matrix: ISMatrix | Mapping[str, Any], title: str = "IS[x -> y]",
                    width: int = 120, color: bool = True) -> str:
    """A rich table of the matrix as a string (write it with pytest's terminal writer)."""
    from rich.console import Console
    from rich.table import Table

    axes, value, low, high = _cells(matrix)
    from rich.text import Text

    table = Table(title=Text(title), show_lines=True)  # the title may quote a subject: no markup
    table.add_column("mitigate x \\ on y", style="bold")
    for y in axes:
        table.add_column(y, justify="center")
    for i, x in enumerate(axes):
        cells = []
        for j in range(len(axes)):
            v = value[i][j]
            if v is None:
                cells.append("[dim]-[/dim]")
                continue
            style = "red" if v < 0 else "green" if v > 0 else ""
            text = f"{v:+.3f}\n[{low[i][j]:+.2f}, {high[i][j]:+.2f}]"
            cells.append(f"[{style}]{text}[/{style}]" if style else text)
        table.add_row(Text(x), *cells)
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, force_terminal=color, color_system="standard"
                      if color else None, no_color=not color)
    console.print(table)
    return buffer.getvalue()


def render_png(matrix: ISMatrix | Mapping[str, Any], title: str = "IS[x -> y]") -> Image.Image:
    """The heatmap as a PIL image: coloured cells with value and CI, axis labels, a legend."""
    from PIL import Image, ImageDraw, ImageFont

    axes, value, low, high = _cells(matrix)
    n = len(axes)
    width = LABEL_W + CELL_W * n + 20
    height = TITLE_H + LABEL_W // 3 + CELL_H * n + LEGEND_H + 20
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default()
    draw.text((10, 12), f"{title}  (rows: mitigated x, columns: affected y)", fill="black", font=font)
    top = TITLE_H + LABEL_W // 3
    for j, y in enumerate(axes):
        draw.text((LABEL_W + j * CELL_W + 8, top - 18), y, fill="black", font=font)
    finite = [abs(v) for row in value for v in row if v is not None]
    scale = max(finite + [0.05])
    for i, x in enumerate(axes):
        y0 = top + i * CELL_H
        draw.text((8, y0 + CELL_H // 2 - 6), x, fill="black", font=font)
        for j in range(n):
            x0 = LABEL_W + j * CELL_W
            v = value[i][j]
            draw.rectangle([x0, y0, x0 + CELL_W - 1, y0 + CELL_H - 1], fill=diverging_colour(v, scale),
                           outline="white")
            if v is not None:
                ink = "white" if abs(v) / scale > 0.6 else "black"
                draw.text((x0 + 8, y0 + 12), f"{v:+.3f}", fill=ink, font=font)
                draw.text((x0 + 8, y0 + 32), f"[{low[i][j]:+.2f}, {high[i][j]:+.2f}]", fill=ink,
                          font=font)
    legend_top = top + n * CELL_H + 15
    steps = 100
    bar_w = max(CELL_W * n - 80, 100)
    for k in range(steps):
        v = -scale + 2 * scale * k / (steps - 1)
        x0 = LABEL_W + round(k * bar_w / steps)
        draw.rectangle([x0, legend_top, LABEL_W + round((k + 1) * bar_w / steps), legend_top + 12],
                       fill=diverging_colour(v, scale))
    draw.text((LABEL_W, legend_top + 16), f"{-scale:+.2f} worse", fill="black", font=font)
    draw.text((LABEL_W + bar_w - 60, legend_top + 16), f"{scale:+.2f} better", fill="black", font=font)
    draw.text((8, legend_top), "IS legend", fill="black", font=font)
    return image


def save_heatmap_png(matrix: ISMatrix | Mapping[str, Any], path: str | Path,
                     title: str = "IS[x -> y]") -> Path:
    """Write the heatmap PNG to ``path`` (parents created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    render_png(matrix, title).save(path, format="PNG")
    return path


def png_size(n_axes: int) -> tuple[int, int]:
    """The (width, height) of the PNG of an ``n_axes`` x ``n_axes`` matrix."""
    return (LABEL_W + CELL_W * n_axes + 20,
            TITLE_H + LABEL_W // 3 + CELL_H * n_axes + LEGEND_H + 20)
