"""Image and text embeddings of the run's judge (the cost checks' input): computed once ever
through the request layer and the disk cache, verified on every read like an answer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from pytest_t2ibias._types import ImageRequest
from pytest_t2ibias.store.cache import Cache
from pytest_t2ibias.store.request_layer import RequestLayer

ROOT = Path(__file__).resolve().parents[2]


class ColourGenerator:
    fingerprint = "colour-v1"

    def generate(self, requests):
        return [Image.new("RGB", (8, 8), (r.noise_seed % 251, 40, 90)) for r in requests]


class MeanColourEmbedder:
    """Embeds an image as its mean colour and a text as its letter counts."""

    fingerprint = "mean-colour-v1"

    def __init__(self):
        self.images = self.texts = 0

    def embed_images(self, images):
        self.images += len(images)
        return np.array([np.asarray(i, float).mean(axis=(0, 1)) + 1 for i in images])

    def embed_texts(self, texts):
        self.texts += len(texts)
        return np.array([[t.count("a") + 1.0, t.count("o") + 1.0, len(t)] for t in texts])


def test_embeddings_are_computed_once_ever(tmp_path):
    embedder = MeanColourEmbedder()
    first = RequestLayer(Cache(tmp_path))
    images = first.images(ColourGenerator(), [ImageRequest("a doctor", 0, i) for i in range(5)])
    vectors = first.image_embeddings(embedder, images)
    texts = first.text_embeddings(embedder, ["a doctor", "a nurse"])
    assert vectors.shape == (5, 3) and texts.shape == (2, 3)
    second = RequestLayer(Cache(tmp_path))
    again = second.image_embeddings(embedder, second.images(
        ColourGenerator(), [ImageRequest("a doctor", 0, i) for i in range(5)]))
    np.testing.assert_array_equal(vectors, again)
    np.testing.assert_array_equal(texts, second.text_embeddings(embedder, ["a doctor", "a nurse"]))
    assert (embedder.images, embedder.texts) == (5, 2)
    assert second.counters.answers_scored == 0 and second.counters.answers_from_cache == 7


def test_an_edited_embedding_is_recomputed(tmp_path):
    embedder = MeanColourEmbedder()
    layer = RequestLayer(Cache(tmp_path))
    images = layer.images(ColourGenerator(), [ImageRequest("a doctor", 0, 0)])
    vector = layer.image_embeddings(embedder, images)
    layer.flush()
    entry = next(p for p in (tmp_path / "answers").rglob("*.json")
                 if "embedding" in json.loads(p.read_text()))
    record = json.loads(entry.read_text())
    record["embedding"][0] += 1.0
    entry.write_text(json.dumps(record))
    with pytest.warns(Warning):
        again = RequestLayer(Cache(tmp_path)).image_embeddings(embedder, images)
    np.testing.assert_array_equal(vector, again)
    assert embedder.images == 2


def test_toy_clip_embeds_images_and_prompts():
    from pytest_t2ibias.backends.vqa import ClipAnswerer

    judge = ClipAnswerer.from_pretrained(ROOT / "fixtures" / "toy-clip", device="cpu")
    images = [Image.new("RGB", (32, 32), colour) for colour in ("red", "blue")]
    vectors = judge.embed_images(images)
    texts = judge.embed_texts(["a photo of a doctor"])
    assert vectors.shape[0] == 2 and texts.shape == (1, vectors.shape[1])
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
