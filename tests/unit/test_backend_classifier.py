"""ClassifierAnswerer: the model's labels mapped onto an axis' choices."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from PIL import Image

from pytest_t2ibias.backends import Answerer, BackendError, ClassifierAnswerer
from pytest_t2ibias.testing import make_tiny_classifier, torch_threads

LABELS = ["Man", "woman", "boy", "girl"]


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    with torch_threads(1):
        yield


@pytest.fixture(scope="module")
def classifier_dir(tmp_path_factory):
    return make_tiny_classifier(tmp_path_factory.mktemp("cls") / "tiny-vit", LABELS)


@pytest.fixture(scope="module")
def images():
    rng = np.random.default_rng(1)
    return [Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)) for _ in range(3)]


def load(path, **options):
    return ClassifierAnswerer.from_pretrained(path, device="cpu", offline=True, **options)


@pytest.fixture(scope="module")
def label_probabilities(classifier_dir, images):
    """Softmax over all four labels, computed without the answerer."""
    answerer = load(classifier_dir)
    inputs = answerer.processor(images=images, return_tensors="pt")
    with torch.no_grad():
        return answerer.model(**inputs).logits.softmax(-1).numpy().astype(np.float64)


def test_loads_a_vit_classifier(classifier_dir):
    answerer = load(classifier_dir)
    assert isinstance(answerer, Answerer)
    assert type(answerer.model).__name__ == "ViTForImageClassification"
    assert answerer.labels == LABELS


def test_exact_and_case_insensitive_labels_renormalised(classifier_dir, images, label_probabilities):
    scores = load(classifier_dir).score(images, "ignored question", ["woman", "man"])
    picked = label_probabilities[:, [1, 0]]  # "woman" exact, "man" matches "Man"
    np.testing.assert_allclose(scores, picked / picked.sum(1, keepdims=True), atol=1e-6)
    np.testing.assert_allclose(scores.sum(1), 1.0)


def test_label_map_merges_labels_into_choices(classifier_dir, images, label_probabilities):
    label_map = {"Man": "male", "boy": "male", "woman": "female", "girl": "female"}
    scores = load(classifier_dir, label_map=label_map).score(images, "q", ["male", "female"])
    male = label_probabilities[:, 0] + label_probabilities[:, 2]
    female = label_probabilities[:, 1] + label_probabilities[:, 3]
    np.testing.assert_allclose(scores, np.stack([male, female], 1), atol=1e-6)
    assert load(classifier_dir, label_map=label_map).fingerprint != load(classifier_dir).fingerprint


def test_uncovered_choices_list_labels_and_choices(classifier_dir, images):
    with pytest.raises(BackendError) as info:
        load(classifier_dir, origin="--t2i-classifier=gender").score(images, "q", ["male", "woman"])
    message = str(info.value)
    assert message.startswith("--t2i-classifier=gender:")
    assert "['Man', 'woman', 'boy', 'girl']" in message
    assert "['male', 'woman']" in message and "missing: ['male']" in message
    assert "label_map" in message
