"""Draw toy-world images with PIL: every attribute a strong cue that survives 32x32.

Layout (unit square): background split by a horizon at y~0.72; a head at the centre-top
(skin tone, hair colour = age, long side hair = female, mouth = emotion); a torso below
(width = body type; dark suit + white collar + tie = formal, bright shirt + bare forearms =
informal); the occupation's prop in the top-right corner. Objects (laptop, car, mug) are drawn
in their colour on a fixed background, their main surface plain, striped or dotted. Jitter in
position, scale and shade keeps images varied.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image, ImageDraw

from toyworld.palette import PROP_COLOURS

if TYPE_CHECKING:
    from toyworld.sample import Record
    from toyworld.spec import Look

# Used for axes a world leaves out.
PERSON_DEFAULTS = {
    "gender": "male",
    "age": "middle-aged",
    "skin_tone": "medium",
    "body_type": "average",
    "environment": "indoors",
    "clothing": "informal",
    "emotion": "neutral",
}

SKIN = {"light": (242, 210, 182), "medium": (192, 135, 90), "dark": (98, 62, 40)}
HAIR = {
    "young": ((30, 24, 20), (75, 45, 25), (55, 35, 22)),
    "middle-aged": ((138, 136, 132),),
    "old": ((240, 240, 240),),
}
TORSO_HALF_WIDTH = {"slim": 0.13, "average": 0.21, "heavy": 0.31}
HEAD_HALF_WIDTH = {"slim": 0.135, "average": 0.15, "heavy": 0.17}
SUIT = ((28, 32, 52), (38, 38, 44), (24, 30, 40))
SHIRT = ((250, 210, 50), (245, 130, 50), (60, 190, 225), (235, 90, 130), (175, 110, 235))
WALL, FLOOR = (206, 186, 156), (122, 84, 54)
SKY, GRASS, ROAD = (125, 185, 240), (80, 165, 70), (92, 92, 98)
TABLE, COFFEE = (170, 122, 82), (72, 42, 26)
OBJECT_COLOURS = {
    "silver": (172, 178, 190),
    "black": (30, 30, 36),
    "white": (246, 246, 246),
    "red": (205, 30, 35),
    "blue": (35, 75, 200),
    "green": (40, 160, 60),
    "yellow": (240, 210, 40),
}
HORIZON = 0.72


def render_image(attributes: Mapping[str, str], look: Look, seed: int, resolution: int = 32, supersample: int = 3) -> Image.Image:
    """One RGB image of ``resolution`` pixels a side; the same arguments give the same pixels.

    Drawn at ``resolution * supersample`` and box-downsampled, which antialiases the edges.
    """
    rng = random.Random(seed)
    size = resolution * supersample
    image = Image.new("RGB", (size, size))
    canvas = _Canvas(ImageDraw.Draw(image), size)
    if look.kind == "object":
        _draw_object(canvas, look.shape, attributes.get("colour", "silver"),
                     attributes.get("pattern", "plain"), rng)
    else:
        _draw_person(canvas, {**PERSON_DEFAULTS, **attributes}, look, rng)
    return image.reduce(supersample) if supersample > 1 else image


def render_dataset(records: Sequence[Record], resolution: int = 32) -> np.ndarray:
    """Render each record (its attributes, look and seed) into a ``(N, H, W, 3)`` uint8 array."""
    images = np.empty((len(records), resolution, resolution, 3), dtype=np.uint8)
    for i, record in enumerate(records):
        images[i] = np.asarray(render_image(record.attributes, record.look, record.seed, resolution))
    return images


def contact_sheet(images: np.ndarray, columns: int = 8, scale: int = 4) -> Image.Image:
    """Tile ``(N, H, W, 3)`` images into one picture, each enlarged ``scale`` times, for eyeballing."""
    n, h, w, _ = images.shape
    rows = -(-n // columns)
    sheet = Image.new("RGB", (columns * w * scale, rows * h * scale), (255, 255, 255))
    for i in range(n):
        tile = Image.fromarray(images[i]).resize((w * scale, h * scale), Image.NEAREST)
        sheet.paste(tile, ((i % columns) * w * scale, (i // columns) * h * scale))
    return sheet


class _Canvas:
    """ImageDraw in unit coordinates (0..1 across the image)."""

    def __init__(self, draw: ImageDraw.ImageDraw, size: int):
        self.draw, self.size = draw, size

    def _xy(self, points):
        return [round(v * self.size) for v in points]

    def rect(self, box, fill, radius=0.0):
        if radius:
            self.draw.rounded_rectangle(self._xy(box), radius=round(radius * self.size), fill=fill)
        else:
            self.draw.rectangle(self._xy(box), fill=fill)

    def ellipse(self, box, fill):
        self.draw.ellipse(self._xy(box), fill=fill)

    def polygon(self, points, fill):
        self.draw.polygon([tuple(self._xy(p)) for p in points], fill=fill)

    def chord(self, box, start, end, fill):
        self.draw.chord(self._xy(box), start, end, fill=fill)

    def arc(self, box, start, end, fill, width):
        self.draw.arc(self._xy(box), start, end, fill=fill, width=max(1, round(width * self.size)))

    def line(self, points, fill, width):
        self.draw.line(self._xy(points), fill=fill, width=max(1, round(width * self.size)))


def _shade(rgb, rng: random.Random, amount: int = 12):
    """``rgb`` with one brightness shift plus a little per-channel noise."""
    shift = rng.randint(-amount, amount)
    return tuple(max(0, min(255, c + shift + rng.randint(-3, 3))) for c in rgb)


def _draw_background(canvas: _Canvas, outdoors: bool, rng: random.Random, horizon: float):
    top, bottom = (SKY, GRASS) if outdoors else (WALL, FLOOR)
    canvas.rect((0, 0, 1, horizon), _shade(top, rng))
    canvas.rect((0, horizon, 1, 1), _shade(bottom, rng))
    if not outdoors:  # a window frame on the wall makes "indoors" more than a colour
        x = rng.uniform(0.04, 0.1)
        canvas.rect((x, 0.12, x + 0.16, 0.4), (95, 70, 50))
        canvas.rect((x + 0.025, 0.145, x + 0.135, 0.375), (225, 235, 245))


def _draw_person(canvas: _Canvas, a: Mapping[str, str], look: Look, rng: random.Random):
    horizon = HORIZON + rng.uniform(-0.03, 0.03)
    _draw_background(canvas, a["environment"] == "outdoors", rng, horizon)
    s = rng.uniform(0.94, 1.06)
    cx = 0.5 + rng.uniform(-0.05, 0.05)
    hy = 0.33 + rng.uniform(-0.025, 0.025)
    rx, ry = HEAD_HALF_WIDTH[a["body_type"]] * s, 0.165 * s
    tw = TORSO_HALF_WIDTH[a["body_type"]] * s
    skin = _shade(SKIN[a["skin_tone"]], rng, 8)
    hair = _shade(rng.choice(HAIR[a["age"]]), rng, 6)
    formal = a["clothing"] == "formal"
    cloth = _shade(rng.choice(SUIT if formal else SHIRT), rng, 10)
    top = hy + ry * 1.25  # shoulders

    # arms (suit sleeves, or short sleeves over bare forearms), then torso, then neck
    for side in (-1, 1):
        x0, x1 = sorted((cx + side * tw, cx + side * (tw + 0.07 * s)))
        canvas.rect((x0, top + 0.03, x1, 0.95), skin if not formal else cloth, radius=0.02)
        if not formal:
            canvas.rect((x0, top + 0.03, x1, top + 0.12), cloth, radius=0.02)
        canvas.ellipse((x0 - 0.005, 0.9, x1 + 0.005, 0.98), skin)
    canvas.rect((cx - tw, top, cx + tw, 1.1), cloth, radius=0.06)
    canvas.rect((cx - 0.045 * s, hy, cx + 0.045 * s, top + 0.02), skin)
    if formal:
        canvas.polygon([(cx - 0.075, top - 0.005), (cx + 0.075, top - 0.005), (cx, top + 0.17)], (248, 248, 248))
        canvas.polygon([(cx - 0.018, top + 0.015), (cx + 0.018, top + 0.015), (cx + 0.026, top + 0.2), (cx, top + 0.24), (cx - 0.026, top + 0.2)], (150, 20, 30))

    if a["gender"] == "female":  # long hair falling to the shoulders
        for side in (-1, 1):
            x0, x1 = sorted((cx + side * rx * 0.55, cx + side * rx * 1.32))
            canvas.rect((x0, hy - ry * 0.5, x1, hy + ry * 1.8), hair, radius=0.03)
    canvas.ellipse((cx - rx, hy - ry, cx + rx, hy + ry), skin)
    canvas.chord((cx - rx * 1.12, hy - ry * 1.22, cx + rx * 1.12, hy + ry * 0.42), 180, 360, hair)

    # face: eyes, then the mouth that carries the emotion
    for side in (-1, 1):
        ex = cx + side * rx * 0.42
        canvas.ellipse((ex - 0.018, hy - 0.005, ex + 0.018, hy + 0.03), (25, 20, 20))
    mouth = (60, 15, 20)
    if a["emotion"] == "happy":
        canvas.chord((cx - rx * 0.6, hy + ry * 0.2, cx + rx * 0.6, hy + ry * 0.8), 0, 180, mouth)
    elif a["emotion"] == "sad":
        canvas.arc((cx - rx * 0.5, hy + ry * 0.5, cx + rx * 0.5, hy + ry * 1.0), 200, 340, mouth, 0.03)
        canvas.ellipse((cx - rx * 0.5 - 0.02, hy + 0.04, cx - rx * 0.5 + 0.02, hy + 0.1), (60, 140, 255))
    else:
        canvas.line((cx - rx * 0.4, hy + ry * 0.58, cx + rx * 0.4, hy + ry * 0.58), mouth, 0.022)

    _draw_prop(canvas, look.prop, PROP_COLOURS[look.prop_colour], rng)


def _draw_prop(canvas: _Canvas, shape: str, colour, rng: random.Random):
    """The occupation's badge in the top-right corner, so the subject is visible too."""
    x0, y0 = 0.78 + rng.uniform(-0.02, 0.02), 0.05 + rng.uniform(-0.02, 0.02)
    d = 0.17
    x1, y1, mx, my = x0 + d, y0 + d, x0 + d / 2, y0 + d / 2
    if shape == "circle":
        canvas.ellipse((x0, y0, x1, y1), colour)
    elif shape == "square":
        canvas.rect((x0, y0, x1, y1), colour)
    elif shape == "triangle":
        canvas.polygon([(mx, y0), (x1, y1), (x0, y1)], colour)
    elif shape == "diamond":
        canvas.polygon([(mx, y0), (x1, my), (mx, y1), (x0, my)], colour)
    elif shape == "cross":
        t = d / 6
        canvas.rect((mx - t, y0, mx + t, y1), colour)
        canvas.rect((x0, my - t, x1, my + t), colour)
    elif shape == "bar":
        canvas.rect((x0, my - d / 5, x1, my + d / 5), colour)


def _draw_pattern(canvas: _Canvas, box, pattern: str, colour_name: str, rng: random.Random):
    """Stripes (two bands across) or dots (a row of three) on ``box``: marks ~2-3 px at 32 px,
    in white on a dark surface and near-black on a light one, so the surface's own colour still
    fills most of it. toy-sd's anchored VAE keeps them on mugs and laptops; a car's dots, on a
    thinner box, it loses."""
    if pattern == "plain":
        return
    x0, y0, x1, y1 = box
    mark = _shade((30, 30, 36) if colour_name in ("white", "silver", "yellow") else (246, 246, 246), rng, 6)
    w, h = x1 - x0, y1 - y0
    if pattern == "striped":
        for at in (0.3, 0.65):
            y = y0 + h * (at + rng.uniform(-0.03, 0.03))
            canvas.rect((x0, y, x1, y + max(0.065, h * 0.13)), mark)
    elif pattern == "dotted":
        y = y0 + h * (0.5 + rng.uniform(-0.05, 0.05))
        r = 0.045
        for at in (0.2, 0.5, 0.8):
            x = x0 + w * at
            canvas.ellipse((x - r, y - r, x + r, y + r), mark)


def _draw_object(canvas: _Canvas, shape: str, colour_name: str, pattern: str, rng: random.Random):
    colour = _shade(OBJECT_COLOURS[colour_name], rng, 8)
    s = rng.uniform(0.92, 1.06)
    cx = 0.5 + rng.uniform(-0.05, 0.05)
    if shape == "laptop":
        _draw_background(canvas, False, rng, 0.7 + rng.uniform(-0.03, 0.03))
        top = 0.22 + rng.uniform(-0.03, 0.03)
        canvas.rect((cx - 0.32 * s, top, cx + 0.32 * s, 0.68), colour, radius=0.02)
        canvas.rect((cx - 0.25 * s, top + 0.07, cx + 0.25 * s, 0.61), _shade((150, 195, 235), rng, 8))
        # the lid's frame is too thin to carry a pattern: the screen's wallpaper does
        _draw_pattern(canvas, (cx - 0.25 * s, top + 0.07, cx + 0.25 * s, 0.61), pattern, "white", rng)
        canvas.polygon([(cx - 0.36 * s, 0.68), (cx + 0.36 * s, 0.68), (cx + 0.44 * s, 0.82), (cx - 0.44 * s, 0.82)], colour)
    elif shape == "car":
        canvas.rect((0, 0, 1, 0.7), _shade(SKY, rng))
        canvas.rect((0, 0.7, 1, 1), _shade(ROAD, rng))
        base = 0.74 + rng.uniform(-0.03, 0.03)
        canvas.polygon([(cx - 0.25 * s, base - 0.22), (cx - 0.16 * s, base - 0.38), (cx + 0.16 * s, base - 0.38), (cx + 0.27 * s, base - 0.22)], colour)
        canvas.polygon([(cx - 0.19 * s, base - 0.23), (cx - 0.13 * s, base - 0.34), (cx + 0.13 * s, base - 0.34), (cx + 0.2 * s, base - 0.23)], (170, 210, 240))
        canvas.rect((cx - 0.44 * s, base - 0.24, cx + 0.44 * s, base), colour, radius=0.05)
        _draw_pattern(canvas, (cx - 0.44 * s, base - 0.24, cx + 0.44 * s, base - 0.09), pattern, colour_name, rng)
        for side in (-1, 1):
            wx = cx + side * 0.26 * s
            canvas.ellipse((wx - 0.09, base - 0.09, wx + 0.09, base + 0.09), (20, 20, 20))
            canvas.ellipse((wx - 0.04, base - 0.04, wx + 0.04, base + 0.04), (150, 150, 150))
    elif shape == "mug":
        # Tall and narrow with a handle, on a bare wall (no window) and a table: unlike the
        # laptop's wide screen and the car's sky and road. The body is large enough that its
        # colour fills ~15% of the image at 32 px.
        table = 0.7 + rng.uniform(-0.03, 0.03)
        canvas.rect((0, 0, 1, table), _shade(WALL, rng))
        canvas.rect((0, table, 1, 1), _shade(TABLE, rng))
        left, right = cx - 0.2 * s, cx + 0.12 * s
        top, bottom = 0.3 + rng.uniform(-0.03, 0.03), table + 0.08
        canvas.arc((right - 0.1 * s, top + 0.1, right + 0.16 * s, bottom - 0.1), -90, 90, colour, 0.06)
        canvas.rect((left, top, right, bottom), colour, radius=0.03)
        _draw_pattern(canvas, (left, top + 0.04, right, bottom), pattern, colour_name, rng)
        canvas.ellipse((left, top - 0.04, right, top + 0.04), colour)
        canvas.ellipse((left + 0.03, top - 0.025, right - 0.03, top + 0.025), _shade(COFFEE, rng, 6))


def write_labelled_folder(folder, n: int, seed: int = 0, subjects: Sequence[str] | None = None,
                          world=None, resolution: int = 32) -> list[dict]:
    """Render ``n`` world samples into ``folder`` with ``index.jsonl`` of their true attributes
    (``{"file", "subject", "caption", <axis>: value, ...}`` a line): a labelled folder to audit
    a judge on (``t2ibias.audit_judge``, the ``judge_agrees`` kind)."""
    import json
    from pathlib import Path

    from toyworld.sample import sample_people
    from toyworld.spec import load_world

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    records = sample_people(world or load_world(), n, seed, subjects)
    rows = []
    for i, record in enumerate(records):
        name = f"{i:05d}.png"
        render_image(record.attributes, record.look, record.seed, resolution).save(folder / name)
        rows.append({"file": name, "subject": record.subject, "caption": record.caption,
                     **record.attributes})
    (folder / "index.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    return rows
