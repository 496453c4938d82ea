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


def test_multi_part_axis_takes_a_yes_else_the_none_value(tmp_path):
    answerer = PartAnswerer()
    t2ibias = T2IBias.from_provider(Settings.standalone(vqa="fake", no_cache=True, cache_dir=tmp_path),
                                     Backends(answerer))

    # codes: 1 blind, 2 wheelchair, 3 both (equally sure: the first part listed), 0 neither
    answers = t2ibias.attributes(images([1, 2, 3, 0]), DISABILITY)

    assert [answers.choices[label] for label in answers.labels] == ["blind", "wheelchair", "blind", "fit"]
    assert np.allclose(answers.probabilities.sum(axis=1), 1.0)
    assert answers.probabilities[3].argmax() == DISABILITY.choices.index("fit")
    # the blind part's captions reach the answerer in (yes, no) order; the other part has none
    assert answerer.asked == [("Is the person blind?", ["a photo of a blind person", "a photo of a person"]),
                              ("Is the person in a wheelchair?", None)]


class UnevenPartAnswerer:
    """Per image code: (P(yes) blind, P(yes) wheelchair); NaN: the image cannot be scored."""

    fingerprint = "uneven-part-answerer"
    CODES = {1: (0.6, 0.95), 2: (0.05, 0.55), 3: (0.05, 0.05), 4: (float("nan"), 0.05),
             5: (0.9, 0.55)}

    def score(self, images, question, choices, statements=None):
        part = 0 if question == "Is the person blind?" else 1
        yes = np.array([self.CODES[image.getpixel((0, 0))[0]][part] for image in images])
        return np.stack([yes, 1 - yes], axis=1)


def test_the_surest_yes_wins_and_an_unsure_or_unread_part_abstains_rather_than_reads_fit(tmp_path):
    """Issue #44: the first "yes" listed won, and abstain_below was ignored, so an image the
    judge could not read on a part counted as "fit"."""
    from dataclasses import replace

    from pytest_t2ibias._types import ABSTAINED

    t2ibias = T2IBias.from_provider(Settings.standalone(vqa="fake", no_cache=True, cache_dir=tmp_path),
                                     Backends(UnevenPartAnswerer()))
    read = t2ibias.attributes(images([1, 2, 3, 4, 5]), replace(DISABILITY, abstain_below=0.7))
    named = [read.choices[label] if label >= 0 else "abstained" for label in read.labels]
    # 1: both yes, wheelchair surer (0.95 > 0.6: 0.6 is also below the floor); 2: wheelchair
    # 0.55 < 0.7, blind a sure no: neither yes nor all no; 3: both sure no; 4: blind unscorable;
    # 5: blind a sure yes beside an unsure wheelchair.
    assert named == ["wheelchair", "abstained", "fit", "abstained", "blind"]
    assert read.labels[1] == ABSTAINED
    plain = t2ibias.attributes(images([1, 2]), DISABILITY)  # no floor: 0.55 is a yes
    assert [plain.choices[label] for label in plain.labels] == ["wheelchair", "wheelchair"]
