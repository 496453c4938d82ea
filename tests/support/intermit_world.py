"""InterMit's fake world: a conftest whose generator and answerer follow the prompt exactly, and its suite."""

from __future__ import annotations

# A world drawn as pixels: pixel j of row 0 holds the value of axis j, so a fake answerer can
# read back exactly what the fake generator decided from the prompt.
#   gender: as the prompt says, else male ("male" model) -> wbar 1
#   age: as the prompt says; else young for a female, else image index even -> young (balanced)
#        ("skews-age" model: old unless the prompt says otherwise)
#   environment: as the prompt says, else indoors -> wbar 1
FAKE_WORLD = '''
import hashlib
import numpy as np
import pytest
from PIL import Image

AXES = {"gender": ("male", "female"), "age": ("young", "old"),
        "environment": ("indoors", "outdoors")}


class FakeWorldGenerator:
    def __init__(self, model):
        self.model = model
        self.fingerprint = "fake-world:" + model

    def attributes(self, prompt, index):
        words = prompt.split()
        gender = "female" if "female" in words else "male"
        if "young" in words or "old" in words:
            age = "young" if "young" in words else "old"
        elif self.model.endswith("skews-age"):
            age = "old"
        else:
            age = "young" if (gender == "female" or index % 2 == 0) else "old"
        environment = "outdoors" if "outdoors" in words else "indoors"
        return {"gender": gender, "age": age, "environment": environment}

    def generate(self, requests):
        images = []
        for request in requests:
            values = self.attributes(request.prompt, request.index)
            image = Image.new("RGB", (8, 8), "white")
            for j, (axis, choices) in enumerate(AXES.items()):
                image.putpixel((j, 0), (100 * choices.index(values[axis]), 0, 0))
            image.putpixel((7, 7), (request.index % 256, request.index // 256, 1))
            images.append(image)
        return images


class FakeAnswerer:
    fingerprint = "fake-answerer"

    def score(self, images, question, choices, statements=None):
        rows = []
        for image in images:
            row = np.zeros(len(choices))
            axis = next((a for a in AXES if a in question.lower().replace("?", "").split()), None)
            if axis is None:  # the person filter: everyone is a person
                row[choices.index("yes")] = 1.0
            else:
                j = list(AXES).index(axis)
                row[choices.index(AXES[axis][image.getpixel((j, 0))[0] // 100])] = 1.0
            rows.append(row)
        return np.array(rows)


class ContrastiveFakeAnswerer(FakeAnswerer):
    """A contrastive judge (it embeds images) for CLIP-IQA: "Good photo." (and every other
    pair's positive) weighs 0.3 for a male image, 0.9 for a female one, plus (image index %
    5) / 100."""

    fingerprint = "fake-contrastive"

    def __init__(self, blind=False):
        self.blind = blind  # reads every image's quality as 0.5 (as toy-clip does)

    def score(self, images, question, choices, statements=None):
        if not statements or not all(s.endswith(" photo.") for s in statements):
            return super().score(images, question, choices, statements)  # not a CLIP-IQA pair
        if self.blind:
            return np.full((len(images), 2), 0.5)
        good = np.array([0.3 + 0.6 * (image.getpixel((0, 0))[0] // 100)
                         + image.getpixel((7, 7))[0] % 5 / 100 for image in images])
        return np.stack([good, 1 - good], axis=1)

    def embed_images(self, images):
        return np.array([[float(image.getpixel((0, 0))[0]), 1.0] for image in images])

    def embed_texts(self, texts):
        return np.ones((len(texts), 2))


made = []


@pytest.hookimpl
def pytest_t2ibias_make_generator(config, model, role):
    made.append((role, model))
    return FakeWorldGenerator(model)


@pytest.hookimpl
def pytest_t2ibias_make_vqa(config, model):
    if model.startswith("contrastive"):
        return ContrastiveFakeAnswerer(blind=model.endswith("blind"))
    return FakeAnswerer()
'''


SUITE = """\
suite: fake
defaults: {images_per_prompt: 48, seed: 0}
prompt: "a photo of a {subject}"
subjects: [nurse]
filter: {question: "Is there a person in the image?", choices: [yes, no], keep: yes}
axes:
  gender:
    question: "What is the gender of the person?"
    choices: [male, female]
    counterfactuals: {male: "a photo of a male {subject}", female: "a photo of a female {subject}"}
  age:
    question: "What is the age of the person?"
    choices: [young, old]
    counterfactuals: {young: "a photo of a young {subject}", old: "a photo of an old {subject}"}
  environment:
    question: "Is the person's environment indoors or outdoors?"
    choices: [indoors, outdoors]
    counterfactuals: {indoors: "a photo of a {subject} working indoors",
                      outdoors: "a photo of a {subject} working outdoors"}
"""


class FakeWorldPlugin:
    pass


