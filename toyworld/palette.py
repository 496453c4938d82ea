"""What the toy renderer can draw: axes and values, prop shapes and colours, object shapes.

Its own module so that the world spec can validate against it without importing the
renderer (which imports the spec's types).
"""

from __future__ import annotations

DRAWABLE_VALUES: dict[str, tuple[str, ...]] = {
    "gender": ("male", "female"),
    "age": ("young", "middle-aged", "old"),
    "skin_tone": ("light", "medium", "dark"),
    "body_type": ("slim", "average", "heavy"),
    "environment": ("indoors", "outdoors"),
    "clothing": ("formal", "informal"),
    "emotion": ("happy", "sad", "neutral"),
    "colour": ("silver", "black", "white", "red", "blue", "green", "yellow"),
    "pattern": ("plain", "striped", "dotted"),
}
"""Every axis and value the renderer can draw; a world spec may use any subset."""

PROP_SHAPES = ("circle", "square", "triangle", "diamond", "cross", "bar")
PROP_COLOURS = {
    "red": (220, 30, 30),
    "blue": (40, 80, 220),
    "yellow": (245, 220, 40),
    "green": (30, 150, 50),
    "orange": (245, 140, 20),
    "white": (250, 250, 250),
    "purple": (140, 50, 180),
    "cyan": (30, 200, 210),
    "black": (20, 20, 20),
}
OBJECT_SHAPES = ("laptop", "car", "mug")
