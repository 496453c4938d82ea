"""SocialCounterfactuals' CLIP filter and directional-similarity selection
(metrics/counterfactual_sets), on a planted embedder and on toy-sd's sets read by toy-clip."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from pytest_t2ibias.metrics.counterfactual_sets import (
    CLIP_FILTER_THRESHOLD,
    caption_similarities,
    directional_similarity,
    score_candidate,
    select_candidates,
)

ROOT = Path(__file__).resolve().parents[2]


class PlantedEmbedder:
    """Images are names of planted vectors; captions map to fixed directions."""

    def __init__(self, images: dict[str, list[float]], texts: dict[str, list[float]]) -> None:
        self.images, self.texts = images, texts

    def embed_images(self, images):
        return np.array([self.images[i] for i in images])

    def embed_texts(self, texts):
        return np.array([self.texts[t] for t in texts])


TEXTS = {"a male doctor": [1.0, 0.0, 1.0], "a female doctor": [0.0, 1.0, 1.0]}
CAPTIONS = list(TEXTS)


def test_caption_similarity_is_the_cosine_to_its_own_caption():
    sims = caption_similarities(np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([[1.0, 0.0], [0.0, 3.0]]))
    np.testing.assert_allclose(sims, [1.0, math.sqrt(0.5)])


def test_directional_similarity_is_one_when_images_move_as_the_captions_do():
    captions = np.array(list(TEXTS.values()))
    assert directional_similarity(captions * 1.0, captions) == pytest.approx(1.0)
    backwards = captions[::-1]
    assert directional_similarity(backwards, captions) == pytest.approx(-1.0)
    sideways = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, 1.2]])  # the image changed, not in the edit's direction
    assert directional_similarity(sideways, captions) == pytest.approx(0.0, abs=1e-9)
    assert math.isnan(directional_similarity(captions, np.array([[1.0, 0, 0], [1.0, 0, 0]])))


def test_a_set_with_one_image_off_its_caption_is_filtered_and_the_best_direction_selected():
    embedder = PlantedEmbedder(
        {"m1": [1.0, 0.0, 1.0], "f1": [0.0, 1.0, 1.0],  # a clean edit
         "m2": [1.0, 0.1, 1.0], "f2": [0.3, 1.0, 1.0],  # an edit with some drift
         "m3": [1.0, 0.0, 1.0], "f3": [-1.0, -0.05, 0.0]},  # f3 is no female doctor (cos < 0)
        TEXTS)
    scores = [score_candidate(embedder, [f"m{k}", f"f{k}"], CAPTIONS, label=k) for k in (1, 2, 3)]
    assert [s.passed for s in scores] == [True, True, False]
    assert scores[2].similarities[1] < CLIP_FILTER_THRESHOLD
    assert scores[0].directional > scores[1].directional
    assert [s.label for s in select_candidates(scores, keep=2)] == [1, 2]
    assert select_candidates([scores[2]]) == []  # no faithful candidate: the caption set is dropped
    with pytest.raises(ValueError):
        score_candidate(embedder, ["m1"], CAPTIONS[:1])


def test_toy_sd_sets_pass_toy_clips_filter_and_the_selection_ranks_them():
    pytest.importorskip("diffusers")
    from diffusers import DiffusionPipeline

    from pytest_t2ibias.backends.prompt2prompt import generate_counterfactual_set
    from pytest_t2ibias.backends.vqa import ClipAnswerer

    pipeline = DiffusionPipeline.from_pretrained(ROOT / "fixtures" / "toy-sd")
    pipeline.set_progress_bar_config(disable=True)
    judge = ClipAnswerer.from_pretrained(ROOT / "fixtures" / "toy-clip", device="cpu")
    scores = []
    for seed in range(3):
        made = generate_counterfactual_set(pipeline, "a photo of a {} doctor", {"gender": ["male", "female"]},
                                           seed=seed, steps=20)
        scores.append(score_candidate(judge, [m.image for m in made.members], [m.prompt for m in made.members],
                                      label=seed))
    assert all(s.passed for s in scores)  # toy-clip reads 0.30 to 0.35 for toy-sd's doctors
    assert all(s.directional > 0.3 for s in scores)  # male -> female moves the image that way
    chosen = select_candidates(scores)
    assert chosen == [max(scores, key=lambda s: s.directional)]
