"""Issue #45: Prompt-to-Prompt sets through the request layer, cached like every image:
image i of each prompt is that prompt's member of the set made at image i's noise seed."""

from __future__ import annotations

from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def test_the_set_generator_answers_each_request_from_its_seeds_set_and_caches_it(tmp_path):
    from diffusers import DiffusionPipeline

    from pytest_t2ibias._types import ImageRequest
    from pytest_t2ibias.backends.generator import DiffusersGenerator
    from pytest_t2ibias.backends.prompt2prompt import (
        CounterfactualSetGenerator,
        generate_prompt_set,
    )
    from pytest_t2ibias.store.cache import Cache
    from pytest_t2ibias.store.request_layer import RequestLayer

    pipeline = DiffusionPipeline.from_pretrained(ROOT / "fixtures" / "toy-sd")
    inner = DiffusersGenerator(pipeline, model_fingerprint="toy-sd", steps=6, guidance_scale=7.5)
    prompts = ["a photo of a male doctor", "a photo of a female doctor"]
    sets = CounterfactualSetGenerator(inner, prompts)
    assert sets.fingerprint.startswith("prompt2prompt(cross 0.8, self 0.4, set ")
    assert sets.fingerprint != CounterfactualSetGenerator(inner, prompts[::-1]).fingerprint
    requests = [ImageRequest(p, 0, i) for p in prompts for i in range(2)]
    layer = RequestLayer(Cache(tmp_path / "cache"), batch_size=3)  # batches split the sets
    images = layer.images(sets, requests)
    for i in range(2):
        expected, _ = generate_prompt_set(pipeline, prompts, seed=requests[i].noise_seed % 2**63, steps=6)
        for p in range(2):
            got = np.asarray(images[p * 2 + i].image, dtype=float)
            assert np.abs(got - np.asarray(expected[p], dtype=float)).max() <= 1
    again = RequestLayer(Cache(tmp_path / "cache"), batch_size=3)
    again.images(sets, requests)
    assert again.counters.images_from_cache == 4 and again.counters.images_generated == 0


def test_sets_of_several_seeds_share_a_call_and_come_out_as_if_made_alone(monkeypatch):
    from diffusers import DiffusionPipeline

    from pytest_t2ibias._types import ImageRequest
    from pytest_t2ibias.backends import prompt2prompt
    from pytest_t2ibias.backends.generator import DiffusersGenerator

    pipeline = DiffusionPipeline.from_pretrained(ROOT / "fixtures" / "toy-sd")
    prompts = ["a photo of a male doctor", "a photo of a female doctor", "a photo of an old doctor"]
    together = prompt2prompt.generate_prompt_sets(pipeline, prompts, seeds=[3, 5, 8], steps=6)
    for seed, (images, region) in zip([3, 5, 8], together):
        alone, alone_region = prompt2prompt.generate_prompt_set(pipeline, prompts, seed=seed, steps=6)
        for got, expected in zip(images, alone):
            assert np.abs(np.asarray(got, dtype=float) - np.asarray(expected, dtype=float)).max() <= 2
        assert np.abs(region - alone_region).max() < 1e-3  # each set's own region
    assert np.abs(np.asarray(together[0][0][1], dtype=float)
                  - np.asarray(together[1][0][1], dtype=float)).max() > 20  # the seeds differ

    seeds_a_call = []
    make = prompt2prompt.generate_prompt_sets

    def counting(*args, **kwargs):
        seeds_a_call.append(len(kwargs["seeds"]))
        return make(*args, **kwargs)

    monkeypatch.setattr(prompt2prompt, "generate_prompt_sets", counting)
    inner = DiffusersGenerator(pipeline, model_fingerprint="toy-sd", steps=4, guidance_scale=7.5,
                               batch_size=7)  # 7 images a call: two sets of three
    sets = prompt2prompt.CounterfactualSetGenerator(inner, prompts)
    requests = [ImageRequest(p, 0, i) for i in range(5) for p in prompts]
    images = sets.generate(requests + requests[:2])  # asked twice: made once
    assert seeds_a_call == [2, 2, 1] and len(images) == 17
    assert images[15] is images[0] and images[16] is images[1]


class _ToySdInstrument:
    """toy-sd through the request layer, a judge reading 'male' off the red channel, and
    embeddings from the pixels (images) and a seeded draw (texts)."""

    sightings = None

    def __init__(self, tmp_path):
        from types import SimpleNamespace

        from diffusers import DiffusionPipeline

        from pytest_t2ibias.backends.generator import DiffusersGenerator
        from pytest_t2ibias.store.cache import Cache
        from pytest_t2ibias.store.request_layer import RequestLayer

        pipeline = DiffusionPipeline.from_pretrained(ROOT / "fixtures" / "toy-sd")
        self.inner = DiffusersGenerator(pipeline, model_fingerprint="toy-sd", steps=4, guidance_scale=7.5)
        self.requests = RequestLayer(Cache(tmp_path / "cache"), batch_size=8)
        self.plan = SimpleNamespace(seed=0, sampling={})
        self.projection = np.random.default_rng(0).normal(size=(48, 16))

    def generator(self, role="candidate"):
        return self.inner

    def text_embeddings(self, texts):
        import zlib

        rows = np.stack([np.random.default_rng(zlib.crc32(t.encode())).normal(size=16) for t in texts])
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def image_embeddings(self, images):
        pixels = np.stack([np.asarray(i.image.resize((4, 4)), dtype=float).ravel() / 255 for i in images])
        rows = (pixels - 0.5) @ self.projection
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)

    def attributes(self, images, axis, filter=None):
        from pytest_t2ibias._types import Answers

        labels = np.array([0 if np.asarray(i.image)[..., 0].mean() > 128 else 1 for i in images])
        return Answers(axis.question, axis.choices, labels, np.full((len(labels), 2), np.nan),
                       tuple(i.prompt for i in images), tuple(i.key for i in images))

    def judge_name(self, axis):
        return "red channel"


def test_each_seed_keeps_the_candidate_fraction_with_the_best_directional_similarity(tmp_path):
    from pytest_t2ibias.kinds.judge_across_groups import group_prompts
    from pytest_t2ibias.methods.socialcf import _candidate_sets, judge_across_groups
    from pytest_t2ibias.metrics.counterfactual_sets import directional_similarity
    from pytest_t2ibias.suite_spec import AxisSpec

    world = _ToySdInstrument(tmp_path)
    gender = AxisSpec("gender", "What is the gender?", ("male", "female"))
    groups = group_prompts("a photo of a {} {subject}", "doctor", gender, [])
    audit = judge_across_groups(world, gender, groups, 3, neutral=["a photo of a doctor"], k=None,
                                tolerance=0.1, clip_filter=-1, fractions=(0.8, 0.0))
    assert audit.method.startswith("Prompt-to-Prompt") and audit.kept == 3
    candidates, _ = _candidate_sets(world, [p for *_, p in groups], 3, (0.8, 0.0))  # cached
    captions = world.text_embeddings([p for *_, p in groups])
    keys = audit.answers.image_keys
    for seed in range(3):
        scores = [directional_similarity(world.image_embeddings([images[seed], images[3 + seed]]), captions)
                  for images in (c.made for c in candidates)]
        best = candidates[int(np.argmax(scores))].judged
        assert (keys[seed], keys[3 + seed]) == (best[seed].key, best[3 + seed].key)
    assert "(p=0.8 2, p=0 1)" in audit.filter_note  # each fraction wins a seed here
    assert world.requests.counters.images_generated == 2 * 2 * 3  # two fractions, made once


class _BlackedOutView:
    """A judge-side view (``methods.socialcf.judge_side_view``): the judge sees every image of
    a prompt naming "female" black (its blue channel: the image's index, so two seeds differ);
    the generator made them as toy-sd draws them."""

    judge_side = True

    def __init__(self, inner):
        self.inner = inner
        self.fingerprint = f"blacked-out:{inner.fingerprint}"

    def generate(self, requests):
        from PIL import Image

        return [Image.new("RGB", image.size, (0, 0, request.index)) if "female" in request.prompt else image
                for image, request in zip(self.inner.generate(requests), requests)]

    def around(self, inner):
        return _BlackedOutView(inner)


def test_a_judge_side_view_is_made_and_filtered_as_generated_and_judged_as_seen(tmp_path):
    """Issue #45: a planted misreading judge (example_suites/weak_judge.py) must not decide
    which sets the CLIP filter keeps: the sets are Prompt-to-Prompt sets of the generator
    inside the view, the filter and selection read them as made, and only the judge reads
    them through the view (the old code filtered the degraded images, keeping 11 of 48
    weak-judge sets, and made no attention-controlled sets at all behind a wrapper)."""
    from pytest_t2ibias.kinds.judge_across_groups import group_prompts
    from pytest_t2ibias.methods.socialcf import judge_across_groups
    from pytest_t2ibias.suite_spec import AxisSpec

    world = _ToySdInstrument(tmp_path)
    world.inner = _BlackedOutView(world.inner)
    embedded, judged = [], []
    embed, read = world.image_embeddings, world.attributes
    world.image_embeddings = lambda images: (embedded.append(list(images)), embed(images))[1]
    world.attributes = lambda images, axis, filter=None: (judged.append(list(images)), read(images, axis))[1]
    gender = AxisSpec("gender", "What is the gender?", ("male", "female"))
    groups = group_prompts("a photo of a {} {subject}", "doctor", gender, [])
    audit = judge_across_groups(world, gender, groups, 2, neutral=["a photo of a doctor"], k=None,
                                tolerance=0.1, clip_filter=-1, fractions=(0.8,))
    assert audit.method.startswith("Prompt-to-Prompt") and "judge-side view" in audit.method

    def black(item):
        return np.asarray(item.image)[..., :2].max() == 0

    filtered = embedded[0]  # the filter's and the selection's images
    assert len(filtered) == 4 and not any(black(item) for item in filtered)
    assert [black(item) for item in judged[0]] == [False, False, True, True]
    assert {i.key for i in judged[0]}.isdisjoint(i.key for i in filtered)
    assert "before the judge-side view" in audit.filter_note
    assert world.requests.counters.images_generated == 2 * 4  # made once, viewed once
