"""The toy world: a synthetic world with planted biases, its renderer and dataset sampler."""

from toyworld.render import contact_sheet, render_dataset, render_image
from toyworld.sample import (
    Record,
    caption_for,
    caption_words,
    expected_shares,
    joint_distribution,
    sample_people,
    world_vocabulary,
)
from toyworld.spec import (
    DEFAULT_WORLD_PATH,
    Axis,
    Captions,
    Coupling,
    Look,
    Modifier,
    Subject,
    World,
    WorldSpecError,
    load_world,
    parse_world,
)

__all__ = [
    "DEFAULT_WORLD_PATH",
    "Axis",
    "Captions",
    "Coupling",
    "Look",
    "Modifier",
    "Record",
    "Subject",
    "World",
    "WorldSpecError",
    "caption_for",
    "caption_words",
    "contact_sheet",
    "expected_shares",
    "joint_distribution",
    "load_world",
    "parse_world",
    "render_dataset",
    "render_image",
    "sample_people",
    "world_vocabulary",
]
