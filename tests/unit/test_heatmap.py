"""The IS heatmap: a rich table string and a PIL PNG with the right size and colours."""

from __future__ import annotations

import numpy as np
from PIL import Image

from pytest_t2ibias import ISMatrix
from pytest_t2ibias.reports.heatmap import (
    CELL_H,
    CELL_W,
    LABEL_W,
    TITLE_H,
    matrix_figure,
    png_size,
    render_terminal,
    save_heatmap_png,
)

NAN = np.nan


def _matrix() -> ISMatrix:
    value = np.array([[NAN, -0.4], [0.3, NAN]])
    return ISMatrix(axes=("gender", "age"), value=value, low=value - 0.1, high=value + 0.1,
                    w_init={}, n_images={"initial": 48})


def test_png_has_the_size_and_a_red_negative_cell(tmp_path):
    path = save_heatmap_png(_matrix(), tmp_path / "out" / "is.png", title="nurse")
    with Image.open(path) as image:
        assert image.format == "PNG"
        assert image.size == png_size(2)
        top = TITLE_H + LABEL_W // 3

        def corner(i: int, j: int) -> tuple[int, int, int]:  # inside the cell, away from text
            return image.convert("RGB").getpixel((LABEL_W + j * CELL_W + CELL_W - 5,
                                                  top + i * CELL_H + CELL_H - 5))

        red, green = corner(0, 1), corner(1, 0)
        assert red[0] > 150 and red[1] < 100 and red[2] < 100      # IS[gender->age] < 0
        assert green[1] > 120 and green[0] < 120                  # IS[age->gender] > 0
        assert corner(0, 0) == (220, 220, 220)                    # undefined: grey


def test_terminal_table_shows_values_and_intervals():
    text = render_terminal(_matrix(), title="IS nurse", color=False)
    assert "IS nurse" in text and "-0.400" in text and "[-0.50, -0.30]" in text
    coloured = render_terminal(_matrix(), color=True)
    assert "\x1b[31m" in coloured  # red for the negative cell


def test_figure_is_plain_builtins_and_renders_too(tmp_path):
    figure = matrix_figure(_matrix())
    assert figure["value"] == [[None, -0.4], [0.3, None]]
    save_heatmap_png(figure, tmp_path / "from_figure.png")
