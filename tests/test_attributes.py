"""Reading an axis off images (``T2IBias.attributes``): multi-part axes ask one yes/no question
per part, and a CLIP-style answerer gets each part's yes/no statements."""

from __future__ import annotations

import numpy as np
from PIL import Image

from pytest_t2ibias._settings import Settings
from pytest_t2ibias._types import GeneratedImage, ImageSet
from pytest_t2ibias.facade import T2IBias
from pytest_t2ibias.suite_spec import AxisSpec, QuestionPart

DISABILITY = AxisSpec(
    name="disability", question="(parts)", choices=("blind", "wheelchair", "fit"),
    parts=(QuestionPart("blind", "Is the person blind?",
                        {"yes": "a photo of a blind person", "no": "a photo of a person"}),
           QuestionPart("wheelchair", "Is the person in a wheelchair?")),
    none_value="fit",
)


class PartAnswerer:
    """Says yes to a part when the image's red channel names it; records what it was asked."""

    fingerprint = "part-answerer"

    def __init__(self) -> None:
        self.asked: list[tuple[str, list[str] | None]] = []

    def score(self, images, question, choices, statements=None):
        self.asked.append((question, statements))
        wanted = {"Is the person blind?": 1, "Is the person in a wheelchair?": 2}[question]
        yes = np.array([image.getpixel((0, 0))[0] & wanted for image in images]) > 0
        return np.stack([np.where(yes, 0.9, 0.1), np.where(yes, 0.1, 0.9)], axis=1)


class Backends:
    def __init__(self, answerer) -> None:
        self.answerer = answerer

    def vqa(self, model: str):
        return self.answerer


def images(codes: list[int]) -> ImageSet:
    return ImageSet(tuple(
        GeneratedImage(prompt="p", seed=0, index=i, image=Image.new("RGB", (4, 4), (code, 0, 0)),
                       key=f"k{i}", content_hash=f"h{code}-{i}")
        for i, code in enumerate(codes)))


def test_multi_part_axis_takes_the_first_yes_else_the_none_value(tmp_path):
    answerer = PartAnswerer()
    t2ibias = T2IBias.from_provider(Settings.standalone(vqa="fake", no_cache=True, cache_dir=tmp_path),
                                     Backends(answerer))

    # codes: 1 blind, 2 wheelchair, 3 both (the first part listed wins), 0 neither
    answers = t2ibias.attributes(images([1, 2, 3, 0]), DISABILITY)

    assert [answers.choices[label] for label in answers.labels] == ["blind", "wheelchair", "blind", "fit"]
    assert np.allclose(answers.probabilities.sum(axis=1), 1.0)
    assert answers.probabilities[3].argmax() == DISABILITY.choices.index("fit")
    # the blind part's captions reach the answerer in (yes, no) order; the other part has none
    assert answerer.asked == [("Is the person blind?", ["a photo of a blind person", "a photo of a person"]),
                              ("Is the person in a wheelchair?", None)]
