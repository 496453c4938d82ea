"""The toy world: a synthetic world with planted biases, its renderer and dataset sampler."""

from pytest_t2ibias.toyworld.render import contact_sheet
from pytest_t2ibias.toyworld.render import render_dataset
from pytest_t2ibias.toyworld.render import render_image
from pytest_t2ibias.toyworld.sample import Record
from pytest_t2ibias.toyworld.sample import caption_for
from pytest_t2ibias.toyworld.sample import caption_words
from pytest_t2ibias.toyworld.sample import expected_shares
from pytest_t2ibias.toyworld.sample import joint_distribution
from pytest_t2ibias.toyworld.sample import sample_people
from pytest_t2ibias.toyworld.sample import world_vocabulary
from pytest_t2ibias.toyworld.spec import DEFAULT_WORLD_PATH
from pytest_t2ibias.toyworld.spec import Axis
from pytest_t2ibias.toyworld.spec import Captions
from pytest_t2ibias.toyworld.spec import Coupling
from pytest_t2ibias.toyworld.spec import Look
from pytest_t2ibias.toyworld.spec import Modifier
from pytest_t2ibias.toyworld.spec import Subject
from pytest_t2ibias.toyworld.spec import World
from pytest_t2ibias.toyworld.spec import WorldSpecError
from pytest_t2ibias.toyworld.spec import load_world
from pytest_t2ibias.toyworld.spec import parse_world

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
